import { html } from "hono/html";

/** The asset URLs the page links (hashed, see routes/analytics/dashboard/assets.ts), by asset name. */
export type AssetUrls = Record<string, string>;

/** A panel waiting for its data: dashboard.js replaces the placeholder when its call answers. */
const loading = html`<p class="muted placeholder">Loading…</p>`;

/**
 * The dashboard's HTML shell: no data and no inline script; everything is drawn by dashboard.js,
 * each panel as soon as its line of the combined API call arrives. The key field has no name, so
 * even a submit without the script puts no key in a URL.
 */
export function dashboardPage(assets: AssetUrls) {
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>Publisher analytics</title>
        <link rel="icon" href="data:,">
        <link rel="stylesheet" href="${assets["uplot.min.css"]}">
        <link rel="stylesheet" href="${assets["dashboard.css"]}">
        <script src="${assets["uplot.min.js"]}" defer></script>
        <script src="${assets["dashboard.js"]}" defer></script>
      </head>
      <body>
        <!-- The sign-in view is its page's main landmark; it goes with the form it holds. -->
        <main class="signin-main">
          <form id="signin" class="hidden" autocomplete="off">
            <h1>Publisher analytics</h1>
            <label for="key">API key</label>
            <input id="key" type="password" placeholder="ak_..." autocomplete="off" required>
            <button type="submit">Sign in</button>
            <p id="message" role="alert"></p>
            <p class="muted">The key stays in this tab (sessionStorage) and is sent only in the Authorization header.</p>
          </form>
        </main>
        <div id="app" class="hidden">
          <header>
            <h1 id="title" tabindex="-1">Publisher analytics</h1>
            <span id="status" class="muted" role="status"></span>
            <button id="refresh" class="plain" type="button" title="Compute every figure now, past the 30-minute cache">
              Refresh
            </button>
            <button id="signout" class="plain" type="button">Sign out</button>
          </header>
          <form id="filters" class="filters" aria-label="View">
            <label>From <input name="start_date" type="date"></label>
            <label>To <input name="end_date" type="date"></label>
            <label>Time zone <input name="timezone" list="zones" placeholder="UTC"></label>
            <label>Compare <select name="compare">
              <option value="previous_period">Previous period</option>
              <option value="previous_year">Previous year</option>
              <option value="">None</option>
            </select></label>
            <label>Widget <input name="widget_id" list="widgets" placeholder="any"></label>
            <label>Placement <input name="placement_id" placeholder="any"></label>
            <label>Deployment <input name="deployment_type" list="deployments" placeholder="any"></label>
            <button type="submit">Apply</button>
            <datalist id="zones"></datalist>
            <datalist id="widgets"></datalist>
            <datalist id="deployments">
              <option value="embed"></option>
              <option value="brand_agent"></option>
              <option value="sponsored_conversation"></option>
            </datalist>
          </form>
          <div id="problem" class="problem hidden" role="alert">
            <span id="problem-text"></span>
            <button id="retry" type="button">Retry</button>
          </div>
          <main>
            <section class="wide">
              <h2>Right now</h2>
              <p id="realtime-scope" class="muted note hidden"></p>
              <div id="realtime" class="realtime">${loading}</div>
              <div id="today" class="today">${loading}</div>
            </section>
            <section class="wide">
              <h2>Summary</h2>
              <div id="cards">${loading}</div>
            </section>
            <section class="wide">
              <h2>Daily sessions and queries</h2>
              <div id="chart">${loading}</div>
              <p id="chart-note" class="muted note hidden"></p>
            </section>
            <section class="wide">
              <h2>Top articles</h2>
              <p class="muted note">Clicks on our tracking links; impressions are the times an article was shown in
                search results or cited in an answer.</p>
              <p id="articles-scope" class="muted note hidden"></p>
              <div class="split">
                <div id="articles">${loading}</div>
                <div id="sites">${loading}</div>
              </div>
            </section>
            <section class="wide">
              <h2>Agent readership</h2>
              <p class="muted note">AI agents calling the API (payproxy, paid proxy, MCP): what they asked, the articles
                they were shown, and their users' clicks.</p>
              <p id="agents-scope" class="muted note hidden"></p>
              <div id="agents">${loading}</div>
            </section>
            <section>
              <h2>By placement</h2>
              <div id="by-placement">${loading}</div>
            </section>
            <section>
              <h2>By deployment type</h2>
              <div id="by-deployment">${loading}</div>
            </section>
            <section class="wide">
              <h2>By referring page</h2>
              <div id="by-referrer">${loading}</div>
            </section>
            <section>
              <h2>Queries per session</h2>
              <div id="depth">${loading}</div>
            </section>
            <section>
              <h2>Intents</h2>
              <div id="intents">${loading}</div>
            </section>
            <section class="wide">
              <h2>Latest questions</h2>
              <div id="logs">${loading}</div>
            </section>
          </main>
        </div>
      </body>
    </html>
  `;
}
