/** Realistic pages for the extraction tests, written for this project. */

/** A news article wrapped in navigation, a cookie banner, ads, a related-links rail and a footer. */
export const ARTICLE_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>City council approves riverside flood barrier | The Harbor Ledger</title>
  <meta property="og:title" content="City council approves riverside flood barrier">
  <meta property="og:site_name" content="The Harbor Ledger">
  <meta property="og:description" content="A 40 million dollar barrier will protect the old town from spring floods.">
  <meta property="article:published_time" content="2026-11-18T07:30:00+01:00">
  <meta name="author" content="Maria Keller">
  <script>window.dataLayer = [{ page: "article" }];</script>
  <style>.ad { border: 1px solid #ccc }</style>
</head>
<body>
  <div class="cookie-banner">We use cookies to improve your experience. <button>Accept all</button></div>
  <header class="site-header">
    <a class="logo" href="/">The Harbor Ledger</a>
    <nav class="main-nav"><ul>
      <li><a href="/news">News</a></li><li><a href="/sport">Sport</a></li><li><a href="/business">Business</a></li>
      <li><a href="/culture">Culture</a></li><li><a href="/opinion">Opinion</a></li><li><a href="/subscribe">Subscribe</a></li>
    </ul></nav>
  </header>
  <div class="ad ad-leaderboard">Advertisement: Save 50% on winter tyres at AutoMax this week only!</div>
  <main>
    <article class="story">
      <h1>City council approves riverside flood barrier</h1>
      <p class="byline">By <a href="/authors/maria-keller">Maria Keller</a> · <time datetime="2026-11-18T07:30:00+01:00">18 November 2026</time></p>
      <figure><img src="/images/barrier.jpg" alt="The river at high water"><figcaption>The river at high water last April.</figcaption></figure>
      <div class="story-body">
        <p>The city council voted on Tuesday to build a flood barrier along the riverside, ending a decade of debate about how to protect the old town from spring floods.</p>
        <p>The barrier will cost about 40 million dollars and run for three kilometres from the harbour bridge to the railway viaduct. Engineers expect construction to start next summer and to finish within three years.</p>
        <div class="ad ad-inline">Advertisement: Dream holidays in the sun from 299 dollars. Book today!</div>
        <p>Floods damaged more than 600 homes and shops in the old town in the past five years. Shop owners on the riverside said the barrier was long overdue and that insurance premiums had doubled since the last flood.</p>
        <p>Critics on the council argued that the barrier would block the view of the river and harm tourism. The mayor said the design includes glass panels and a new promenade so that residents and visitors can still see the water.</p>
        <p>The regional government will pay half of the cost of the flood barrier, and the city will borrow the rest over twenty years. The council also approved a plan to restore wetlands upstream, which should slow the river during heavy rain.</p>
        <p>Residents can see the plans for the barrier at the town hall from Monday, and the council will hold two public meetings about the construction schedule in December.</p>
      </div>
    </article>
    <aside class="related">
      <h2>Most read</h2>
      <ul><li><a href="/a">Ferry timetable changes this winter</a></li><li><a href="/b">Local bakery wins national award</a></li>
      <li><a href="/c">Ten things to do this weekend</a></li></ul>
    </aside>
  </main>
  <div class="newsletter">Sign up for our newsletter and never miss a story. <input type="email"> <button>Sign up</button></div>
  <footer class="site-footer"><p>© 2026 The Harbor Ledger. All rights reserved.</p><a href="/privacy">Privacy</a> <a href="/terms">Terms</a></footer>
</body>
</html>`;

/** A short page with no article structure. */
export const TINY_PAGE =
  `<html><head><title>Tiny</title></head><body><nav>Menu</nav><p>Just one short line here.</p></body></html>`;

/** A page in ISO-8859-1 declared only in a meta tag. */
export const LATIN1_PAGE_TEXT =
  `<html><head><meta charset="iso-8859-1"><title>Caf\u00e9</title></head><body><p>Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e.</p></body></html>`;
