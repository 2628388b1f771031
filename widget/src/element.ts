/**
 * `<ask-ai-widget>`: the Ask AI widget in an open shadow root. It reads its public configuration,
 * answers questions with a streamed answer, numbered citations and three follow-ups, lists related
 * articles, and sends its own analytics events (./tracker.ts). Every server string is set as text.
 */
import { WidgetApi, WidgetApiError } from "./api.ts";
import { watchAttention } from "./attention.ts";
import { el, link, runningScript } from "./dom.ts";
import { hexColor, safeHref, textOn } from "./values.ts";
import { WIDGET_CSS } from "./styles.ts";
import { type EventFields, sessionIdFor, Tracker } from "./tracker.ts";
import type { Citation, InteractionType, PromptChip, Recommendation, SponsoredChip, WidgetConfig } from "./types.ts";

/** Our origin: where this script came from (the API and the events live there). */
const SCRIPT_ORIGIN = (() => {
  const src = runningScript()?.src;
  return src ? new URL(src).origin : location.origin;
})();

/** Event fields must be tokens (analytics/schema.ts); a bad attribute is left out, not sent to be refused. */
const TOKEN = /^[A-Za-z0-9._:@/+-]{1,128}$/;
const MAX_QUERY = 500;
const MAX_HISTORY = 6;
/** The ask route's limit on one history turn: a longer answer kept whole would get the next question refused. */
const MAX_TURN = 2000;
const MAX_RESPONSE = 10_000;

let sheet: CSSStyleSheet | undefined;

/** What started a query, for its event. */
interface QuerySource {
  interaction: InteractionType;
  prompt?: PromptChip;
  sponsored?: SponsoredChip;
}

export class AskAiWidget extends HTMLElement {
  #root: ShadowRoot;
  #started = false;
  #api!: WidgetApi;
  #tracker!: Tracker;
  #config!: WidgetConfig;
  #sessionId = "";
  /** The embed's placement fields (valid tokens only), sent with its events, questions and recommendations. */
  #placement: Record<string, string> = {};
  #history: { role: "user" | "assistant"; content: string }[] = [];
  #busy = false;
  #stop: (() => void) | undefined;
  #viewableSent = false;
  /** The campaign prompts drawn, each with its `prompt_impression` (sent once it is at least half in view). */
  #impressions = new Map<Element, EventFields>();
  /** Custom properties from the configuration (CSSOM: allowed under a strict CSP). */
  #colours: [string, string][] = [];
  #ui!: {
    panel: HTMLElement;
    launcher?: HTMLButtonElement;
    close: HTMLButtonElement;
    body: HTMLElement;
    turns: HTMLElement;
    followHead: HTMLElement;
    follow: HTMLElement;
    status: HTMLElement;
    recsHead: HTMLElement;
    recs: HTMLElement;
    input: HTMLInputElement;
    send: HTMLButtonElement;
  };

  constructor() {
    super();
    this.#root = this.attachShadow({ mode: "open" });
  }

  /** An attribute by its name or its `data-` name. */
  #attr(name: string): string | null {
    return this.getAttribute(name) ?? this.getAttribute(`data-${name}`);
  }

  connectedCallback(): void {
    // Moved in the page (a framework re-parenting it): it is still being read, so it is watched again.
    if (this.#started) {
      if (this.#tracker && !this.#stop) this.#watch();
      return;
    }
    const widgetId = this.#attr("widget-id");
    if (!widgetId || !TOKEN.test(widgetId)) return;
    this.#started = true;
    this.#api = new WidgetApi(SCRIPT_ORIGIN, widgetId);
    // Heavy work waits for the browser to be idle-ish: the page's own rendering comes first.
    setTimeout(() => void this.#start(widgetId), 0);
  }

  disconnectedCallback(): void {
    this.#stop?.();
    this.#stop = undefined;
  }

  async #start(widgetId: string): Promise<void> {
    try {
      // The loader fetched the configuration while this script loaded (see widget/src/loader.ts).
      const host = this as unknown as { askAiConfig?: Promise<Response> };
      const started = host.askAiConfig;
      delete host.askAiConfig;
      this.#config = await this.#api.config(started);
    } catch (err) {
      this.setAttribute("data-state", "unavailable");
      console.warn("ask-ai-widget: not available on this page:", (err as Error).message);
      return;
    }
    this.#sessionId = sessionIdFor(widgetId);
    const common: EventFields = { widget_id: widgetId, session_id: this.#sessionId };
    for (
      const [attr, field] of [
        ["placement-id", "placement_id"],
        ["deployment-type", "deployment_type"],
        ["creative-id", "creative_id"],
        ["line-item-id", "line_item_id"],
        ["publisher-id", "publisher_id"],
      ]
    ) {
      const v = this.#attr(attr!);
      if (v && TOKEN.test(v)) common[field!] = this.#placement[field!] = v;
    }
    if (/^https?:$/.test(location.protocol)) {
      common.referring_url = (location.origin + location.pathname).slice(0, 2048);
    }
    const noTrack = this.hasAttribute("data-no-track") || this.hasAttribute("no-track");
    this.#tracker = new Tracker(SCRIPT_ORIGIN, widgetId, common, !noTrack);

    this.#draw();
    this.setAttribute("data-state", "ready");
    this.#tracker.send("widget_load");
    // Taken out of the page before it was ready: watched when it comes back.
    if (this.isConnected) this.#watch();
    // The page's headline stands in when the page is not an article of the widget's data model.
    const title = pageHeadline().slice(0, 200);
    if (this.#recommendationsOn()) {
      void this.#loadRecommendations({ page_url: this.#pageUrl(), ...(title ? { query: title } : {}) });
    }
  }

  /**
   * Viewability, engaged time and prompt impressions while the widget is in the page. Viewable is
   * one event per widget: watching again after a move does not count it twice.
   */
  #watch(): void {
    const watched = this.#ui.launcher ?? this.#ui.panel;
    this.#stop = watchAttention(watched, {
      viewable: (pct, ms) => {
        if (this.#viewableSent) return;
        this.#viewableSent = true;
        this.#tracker.send("widget_viewable", { in_view_pct: pct, in_view_ms: ms });
      },
      heartbeat: () => this.#tracker.send("heartbeat"),
    });
    this.#watchImpressions();
  }

  /** The page's canonical address when it names one (as publisher pages do), else its own. */
  #pageUrl(): string | undefined {
    const canonical = document.querySelector<HTMLLinkElement>('link[rel="canonical"]')?.href;
    if (canonical && /^https?:\/\//.test(canonical)) return canonical.slice(0, 2048);
    return /^https?:$/.test(location.protocol) ? (location.origin + location.pathname).slice(0, 2048) : undefined;
  }

  #recommendationsOn(): boolean {
    return this.#config.recommendations?.enabled !== false && this.#attr("recommendations") !== "off";
  }

  #mode(): "inline" | "docked" {
    const m = this.#attr("mode");
    if (m === "inline" || m === "docked") return m;
    return this.#config.mode === "docked" ? "docked" : "inline";
  }

  /** Theme, colours and mode as host attributes and custom properties (CSSOM: allowed under a strict CSP). */
  #applyLook(): void {
    const c = this.#config;
    const mode = this.#mode();
    this.setAttribute("data-mode", mode);
    this.setAttribute("data-position", c.position === "bottom-left" ? "bottom-left" : "bottom-right");
    const theme = this.#attr("theme") ?? c.theme;
    if (theme === "auto") {
      const query = matchMedia("(prefers-color-scheme: dark)");
      this.toggleAttribute("data-dark", query.matches);
      // Follows the reader's system setting while the page is open.
      query.addEventListener("change", (e) => this.toggleAttribute("data-dark", e.matches));
    } else this.toggleAttribute("data-dark", theme === "dark");
    const accent = hexColor(c.colors?.accent);
    if (accent) this.#colours.push(["--accent", accent], ["--on-accent", textOn(accent)]);
    const bg = hexColor(c.colors?.background);
    const fg = hexColor(c.colors?.text);
    if (bg && fg) this.#colours.push(["--bg", bg], ["--fg", fg]);
  }

  /** The configured colours, set on the elements that declare the colour variables. */
  #paint(...els: HTMLElement[]): void {
    for (const e of els) for (const [name, value] of this.#colours) e.style.setProperty(name, value);
  }

  #draw(): void {
    const c = this.#config;
    if (!sheet) {
      sheet = new CSSStyleSheet();
      sheet.replaceSync(WIDGET_CSS);
    }
    this.#root.adoptedStyleSheets = [sheet];
    this.#applyLook();
    const docked = this.#mode() === "docked";
    const title = c.title || "Ask AI";

    const close = el("button", {
      class: "close",
      text: "\u00d7",
      attrs: { type: "button", "aria-label": docked ? "Close" : "Close conversation" },
    });
    const heading = el("h2", { text: title, attrs: { id: "ask-title" } });
    const turns = el("div", { attrs: { "aria-live": "polite" } });
    const followHead = el("h3", { text: "Related questions", attrs: { id: "ask-follow" } });
    const follow = el("ul", { class: "follow", attrs: { "aria-labelledby": "ask-follow" } });
    const status = el("p", { class: "status", attrs: { role: "status" } });
    const recsHead = el("h3", { text: "Related articles", attrs: { id: "ask-recs" } });
    const recs = el("ul", { class: "recs", attrs: { "aria-labelledby": "ask-recs" } });
    const body = el("div", { class: "body" }, [turns, followHead, follow, status, recsHead, recs]);
    const input = el("input", {
      attrs: {
        id: "ask-q",
        type: "text",
        maxlength: String(MAX_QUERY),
        autocomplete: "off",
        placeholder: c.placeholder || "Ask a question",
      },
    });
    const initial = this.#attr("initial-query");
    if (initial) input.value = initial.slice(0, MAX_QUERY);
    const send = el("button", { class: "send", text: "Ask", attrs: { type: "submit" } });
    const form = el("form", { attrs: { role: "search" } }, [
      el("label", { class: "sr", text: "Ask a question", attrs: { for: "ask-q" } }),
      input,
      send,
    ]);
    const panel = el("section", {
      class: "panel",
      attrs: { id: "ask-panel", "aria-labelledby": "ask-title" },
    }, [el("header", {}, [heading, close]), body]);
    const chips = this.#chips();
    if (chips) panel.append(chips);
    panel.append(form);
    const a = c.attribution;
    if (a?.show_powered_by !== false) {
      const text = a?.text || "Powered by Ask AI";
      panel.append(el("p", { class: "powered" }, [a?.url ? link(a.url, text) : el("span", { text })]));
    }

    this.#ui = { panel, close, body, turns, followHead, follow, status, recsHead, recs, input, send };
    this.#paint(panel);
    followHead.hidden =
      follow.hidden =
      recsHead.hidden =
      recs.hidden =
        true;
    if (docked) {
      const launcher = el("button", {
        class: "launcher",
        text: title,
        attrs: { type: "button", "aria-expanded": "false", "aria-controls": "ask-panel" },
      });
      panel.setAttribute("role", "dialog");
      panel.hidden = true;
      // The button toggles: closing through it is a close like the panel's own button.
      launcher.addEventListener("click", () => panel.hidden === true ? this.#setOpen(true) : this.#close());
      panel.addEventListener("keydown", (e) => {
        if (e.key === "Escape") this.#close();
      });
      this.#ui.launcher = launcher;
      this.#paint(launcher);
      this.#root.replaceChildren(panel, launcher);
    } else {
      close.hidden = true;
      this.#root.replaceChildren(panel);
    }
    close.addEventListener("click", () => this.#close());
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const q = input.value.trim();
      if (q) void this.#ask(q, { interaction: "free_form" });
    });
  }

  /** The prompt chips: configured prompts (unless `prompt-suggestions="off"`) and sponsored ones. */
  #chips(): HTMLElement | null {
    const setting = this.#attr("prompt-suggestions");
    const prompts: PromptChip[] = setting === "off" ? [] : [...(this.#config.prompts ?? [])];
    const sponsored = this.#config.sponsored ?? [];
    if (!prompts.length && !sponsored.length) return null;
    const list = el("ul", { class: "chips", attrs: { "aria-label": "Suggested questions" } });
    for (const p of prompts) {
      const b = el("button", { class: "chip", text: p.text, attrs: { type: "button" } });
      b.addEventListener("click", () => void this.#ask(p.text, { interaction: "suggested_prompt", prompt: p }));
      list.append(el("li", {}, [b]));
    }
    for (const s of sponsored) {
      const b = el("button", { class: "chip", attrs: { type: "button" } }, [
        el("span", { class: "badge", text: "Sponsored" }),
        document.createTextNode(s.text),
      ]);
      b.addEventListener("click", () => {
        // A chip chosen was seen: its impression goes first if the observer has not sent it yet.
        const unseen = this.#impressions.get(b);
        if (unseen) {
          this.#impressions.delete(b);
          this.#tracker.send("prompt_impression", unseen);
        }
        void this.#ask(s.text, { interaction: "sponsored_prompt", sponsored: s });
      });
      list.append(el("li", {}, [b]));
      this.#impressions.set(b, {
        campaign_id: s.campaign_id,
        prompt_id: s.prompt_id,
        prompt_text: s.text,
        creative_id: s.creative_id,
        line_item_id: s.line_item_id,
      });
    }
    return list;
  }

  /**
   * A campaign prompt counts as shown once at least half of its chip is in view (the chips row
   * scrolls sideways, and the widget may be below the fold or a closed docked panel).
   */
  #watchImpressions(): void {
    if (!this.#impressions.size) return;
    const io = new IntersectionObserver((entries) => {
      for (const e of entries) {
        const fields = this.#impressions.get(e.target);
        if (!e.isIntersecting || e.intersectionRatio < 0.5 || !fields) continue;
        this.#impressions.delete(e.target);
        io.unobserve(e.target);
        this.#tracker.send("prompt_impression", fields);
      }
    }, { threshold: [0.5, 1] });
    for (const chip of this.#impressions.keys()) io.observe(chip);
    const stop = this.#stop;
    this.#stop = () => {
      io.disconnect();
      stop?.();
    };
  }

  #setOpen(open: boolean): void {
    const { panel, launcher, input } = this.#ui;
    if (!launcher) return;
    panel.hidden = !open;
    launcher.setAttribute("aria-expanded", String(open));
    if (open) input.focus();
    else launcher.focus();
  }

  /** Closes the docked panel, or clears the inline conversation; either way a `widget_close`. */
  #close(): void {
    this.#tracker.send("widget_close");
    if (this.#ui.launcher) {
      if (!this.#ui.panel.hidden) this.#setOpen(false);
      return;
    }
    const { turns, follow, followHead, close, input, status } = this.#ui;
    turns.replaceChildren();
    follow.replaceChildren();
    followHead.hidden = follow.hidden = close.hidden = true;
    status.textContent = "";
    this.#history = [];
    input.focus();
  }

  #setStatus(text: string, error = false): void {
    this.#ui.status.textContent = text;
    this.#ui.status.toggleAttribute("data-error", error);
  }

  async #ask(query: string, src: QuerySource): Promise<void> {
    if (this.#busy) return;
    query = query.slice(0, MAX_QUERY);
    this.#busy = true;
    // A chip that started this is removed by the redraw; focus then goes back to the question box.
    const hadFocus = this.#root.activeElement !== null;
    // Pages and tests can wait for the answer on the host: `ask-ai-widget:not([data-busy])`.
    this.toggleAttribute("data-busy", true);
    const ui = this.#ui;
    ui.send.disabled = true;
    ui.input.value = "";
    ui.close.hidden = false;
    const answer = el("p", { class: "a" });
    const cites = el("ol", { class: "cites", attrs: { "aria-label": "Sources" } });
    cites.hidden = true;
    const turn = el("div", { class: "turn" }, [el("p", { class: "q", text: query }), answer, cites]);
    ui.turns.append(turn);
    ui.body.scrollTop = turn.offsetTop - ui.body.offsetTop;
    ui.follow.replaceChildren();
    ui.followHead.hidden = ui.follow.hidden = true;
    this.#setStatus("Answering\u2026");
    try {
      const { text: full, requestId } = await this.#api.ask({
        query,
        session_id: this.#sessionId,
        interaction_type: src.interaction,
        // A sponsored prompt starts a new (sponsored) conversation: earlier turns are not its context.
        history: src.sponsored ? [] : this.#history.slice(-MAX_HISTORY),
        page_url: this.#pageUrl(),
        ...this.#placement,
      }, {
        // A sponsored prompt's conversation starts when the service takes it (not when it refuses
        // it: daily cap, rate limit), and the session is frozen to its campaign from here on.
        started: () => {
          const s = src.sponsored;
          if (!s) return;
          this.#tracker.send("sponsored_impression", {
            campaign_id: s.campaign_id,
            prompt_id: s.prompt_id,
            prompt_text: s.text,
            creative_id: s.creative_id,
            line_item_id: s.line_item_id,
          });
        },
        token: (t) => answer.append(t),
        citations: (list) => this.#drawCitations(cites, list),
        related: (qs) => this.#drawFollowUps(qs),
      });
      answer.textContent = full;
      this.#setStatus("");
      if (src.sponsored) this.#history = [];
      this.#history.push({ role: "user", content: query }, { role: "assistant", content: cut(full, MAX_TURN) });
      const configured = src.sponsored
        ? {
          campaign_id: src.sponsored.campaign_id,
          prompt_id: src.sponsored.prompt_id,
          prompt_text: src.sponsored.text,
        }
        : src.prompt
        ? { prompt_id: src.prompt.id, prompt_text: src.prompt.text }
        : {};
      this.#tracker.send("query", {
        interaction_type: src.interaction,
        prompt: query,
        response: full.slice(0, MAX_RESPONSE),
        // The service derives this event's id from it: its own record of the question, if the
        // reader's leaving reached it too, is then the same event.
        request_id: requestId,
        ...configured,
      });
      if (this.#recommendationsOn()) void this.#loadRecommendations({ page_url: this.#pageUrl(), query });
    } catch (err) {
      turn.remove();
      this.#setStatus(err instanceof WidgetApiError ? err.message : "The answer service is unavailable", true);
    } finally {
      this.#busy = false;
      this.toggleAttribute("data-busy", false);
      ui.send.disabled = false;
      if (hadFocus && !this.#root.activeElement) ui.input.focus();
    }
  }

  #drawCitations(list: HTMLElement, citations: Citation[]): void {
    list.replaceChildren();
    for (const c of citations.slice(0, 20)) {
      const li = el("li", {}, [
        link(c.url, String(c.title ?? "")),
        el("span", { class: "site", text: ` \u2014 ${c.site ?? ""}` }),
      ]);
      if (Number.isInteger(c.n)) li.setAttribute("value", String(c.n));
      list.append(li);
    }
    list.hidden = !citations.length;
  }

  #drawFollowUps(questions: string[]): void {
    const { follow, followHead } = this.#ui;
    follow.replaceChildren();
    for (const q of questions.slice(0, 3)) {
      if (typeof q !== "string" || !q) continue;
      const b = el("button", { class: "chip", text: q, attrs: { type: "button" } });
      b.addEventListener("click", () => void this.#ask(q, { interaction: "automated_followup" }));
      follow.append(el("li", {}, [b]));
    }
    followHead.hidden = follow.hidden = !follow.childElementCount;
  }

  async #loadRecommendations(body: { page_url?: string; query?: string }): Promise<void> {
    let results: Recommendation[];
    try {
      results = await this.#api.recommend({ ...body, limit: 3, session_id: this.#sessionId, ...this.#placement });
    } catch {
      return; // Related articles are extra: the widget works without them.
    }
    const { recs, recsHead } = this.#ui;
    recs.replaceChildren();
    for (const r of results.slice(0, 10)) {
      const href = safeHref(r.url);
      const img = safeHref(r.image_url);
      const li = el("li");
      if (img) {
        const image = el("img", { attrs: { src: img, alt: "", loading: "lazy", width: "64", height: "48" } });
        // Replaced by a blank box of the same size, so nothing shifts (CLS) and no broken icon shows.
        image.addEventListener("error", () => image.replaceWith(el("span", { class: "thumb" })));
        li.append(image);
      }
      li.append(el("div", {}, [
        href ? link(href, String(r.title ?? "")) : el("span", { text: String(r.title ?? "") }),
        el("span", { class: "site", text: String(r.site ?? "") }),
      ]));
      recs.append(li);
    }
    recsHead.hidden = recs.hidden = !recs.childElementCount;
  }
}

if (!customElements.get("ask-ai-widget")) customElements.define("ask-ai-widget", AskAiWidget);

/** The page's headline: its `og:title`, else its first `h1`, else the document title. */
function pageHeadline(): string {
  const og = document.querySelector<HTMLMetaElement>('meta[property="og:title"]')?.content?.trim();
  if (og) return og;
  const h1 = document.querySelector("h1")?.textContent?.trim();
  return h1 || document.title.trim();
}

/** The first `max` UTF-16 units of `text`, without half of a surrogate pair at the cut. */
function cut(text: string, max: number): string {
  const head = text.slice(0, max);
  return /[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head;
}
