/**
 * The widget's stylesheet, adopted by its shadow root (a constructed sheet, so a host page's CSP
 * without `'unsafe-inline'` styles allows it). `:host { all: initial }` stops the page's inherited
 * styles at the boundary, and the colour variables are declared inside (on the panel and the
 * button), so custom properties a page sets on the element do not reach in; nothing here reaches
 * the page.
 */
export const WIDGET_CSS = `
:host{all:initial;display:block;contain:layout style}
.panel,.launcher{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;text-align:left;--bg:#fff;--fg:#1b1f24;--muted:#4f5762;--line:#d5d9de;--soft:#f3f5f7;--accent:#1f5fbf;--on-accent:#fff}
:host([data-dark]) .panel,:host([data-dark]) .launcher{--bg:#16181d;--fg:#f1f3f5;--muted:#b9c0ca;--line:#3a3f47;--soft:#22262d}
:host([data-mode=inline]){height:var(--ask-height,480px)}
:host([data-mode=docked]){position:fixed;bottom:20px;right:20px;z-index:2147483000;height:auto}
:host([data-mode=docked][data-position=bottom-left]){right:auto;left:20px}
*{box-sizing:border-box}
[hidden]{display:none!important}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.panel{display:flex;flex-direction:column;height:100%;background:var(--bg);color:var(--fg);border:1px solid var(--line);border-radius:12px;overflow:hidden}
:host([data-mode=docked]) .panel{position:absolute;bottom:64px;right:0;width:min(380px,calc(100vw - 40px));height:min(560px,calc(100vh - 110px));box-shadow:0 8px 30px rgba(0,0,0,.25)}
:host([data-mode=docked][data-position=bottom-left]) .panel{right:auto;left:0}
header{display:flex;align-items:center;gap:8px;padding:10px 14px;border-bottom:1px solid var(--line)}
h2{font-size:16px;margin:0;flex:1;font-weight:600}
h3{font-size:13px;margin:14px 0 6px;color:var(--muted);font-weight:600;text-transform:uppercase;letter-spacing:.03em}
button{font:inherit;color:inherit;cursor:pointer}
button:focus-visible,a:focus-visible,input:focus-visible{outline:2px solid var(--accent);outline-offset:2px}
.close{background:none;border:0;padding:2px 8px;font-size:20px;line-height:1;border-radius:6px}
.body{flex:1;overflow-y:auto;padding:4px 14px 10px}
.turn{margin:10px 0}
.q{font-weight:600;margin:0 0 4px}
.a{margin:0;white-space:pre-wrap}
.cites{margin:6px 0 0;padding-left:22px;font-size:13px}
.cites li{margin:2px 0}
a{color:var(--fg);text-decoration:underline}
.site{color:var(--muted)}
.chips,.follow{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:6px}
.chips{padding:8px 14px 2px;flex-wrap:nowrap;overflow-x:auto;scrollbar-width:thin}
.chips .chip{white-space:nowrap}
.chip{background:var(--soft);border:1px solid var(--line);border-radius:16px;padding:4px 10px;font-size:13px;text-align:left}
.badge{display:inline-block;margin-right:6px;padding:0 6px;border-radius:8px;font-size:11px;font-weight:600;background:var(--fg);color:var(--bg)}
.recs{list-style:none;margin:0;padding:0}
.recs li{display:flex;gap:10px;align-items:flex-start;margin:8px 0}
.recs img{width:64px;height:48px;object-fit:cover;border-radius:6px;flex:none;background:var(--soft)}
.recs .thumb{display:block;width:64px;height:48px;border-radius:6px;flex:none;background:var(--soft)}
.recs a{font-weight:600}
.recs .site{display:block;font-size:12px}
.status{margin:8px 0;font-size:13px;color:var(--muted)}
.status[data-error]{color:var(--fg);font-weight:600}
form{display:flex;gap:8px;padding:10px 14px;border-top:1px solid var(--line)}
input{flex:1;min-width:0;font:inherit;color:var(--fg);background:var(--bg);border:1px solid var(--line);border-radius:8px;padding:7px 10px}
input::placeholder{color:var(--muted)}
.send,.launcher{background:var(--accent);color:var(--on-accent);border:0;border-radius:8px;padding:7px 14px;font-weight:600}
.launcher{border-radius:24px;padding:12px 18px;box-shadow:0 4px 14px rgba(0,0,0,.25);float:right}
:host([data-position=bottom-left]) .launcher{float:left}
.powered{margin:0;padding:0 14px 8px;font-size:12px;color:var(--muted)}
.powered a{color:var(--muted)}
`;
