/**
 * A real headless Chromium for page tests: Debian's `/usr/bin/chromium` (or `CHROMIUM_PATH`)
 * driven by puppeteer-core. A browser that cannot start fails the test; it is never skipped.
 *
 * @example
 * await using b = await openBrowser("claim page");
 * await b.page.goto(url);
 * await b.shot("code form");           // writes 01-code-form.png under b.shotsDir
 */
import puppeteer, { type Browser, type BrowserContext, type Page } from "puppeteer-core";

/** Where Debian installs Chromium (`apt-get install -y chromium`; `.ci/run` does it when missing). */
export const DEFAULT_CHROMIUM = "/usr/bin/chromium";

/** One page in its own browser context, and the screenshots taken so far. */
export interface BrowserSession extends AsyncDisposable {
  browser: Browser;
  /** The session's context: a new tab for the same reader is `context.newPage()`. */
  context: BrowserContext;
  page: Page;
  /** The temp folder this session's screenshots go to (kept after the test for a human to look at). */
  shotsDir: string;
  /** Screenshot paths in the order taken. */
  shots: string[];
  /**
   * Takes a screenshot named after the step (`NN-step-name.png`) and returns its path: of the whole
   * page, or of the element `selector` names (what a reader should look at on a very long page).
   */
  shot(step: string, selector?: string): Promise<string>;
  /**
   * Like {@link shot}, of what the window shows: the first screen of a page too long to take whole
   * (a full-page shot of the API reference was 0.4 s of the browser's CPU).
   */
  screen(step: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Launches headless Chromium and opens a page; `close()` ends the browser.
 * @param name names the screenshot folder (`browser-<name>-XXXX` under the temp dir).
 * @param opts.hosts host names to send to a local address, e.g. `{ "store.test": "127.0.0.1:41234" }`
 *   (the page keeps its URL and `Host` header; Chromium connects to the local server).
 * @throws Error naming the executable when Chromium is missing or does not start.
 */
export async function openBrowser(
  name: string,
  opts: { hosts?: Record<string, string> } = {},
): Promise<BrowserSession> {
  const { browser, close } = await launch(opts.hosts);
  // The tab the browser opened with: another would start a second renderer.
  const [first] = await browser.pages();
  return await session(name, browser, browser.defaultBrowserContext(), first ?? await browser.newPage(), close);
}

let fileBrowser: Promise<{ browser: Browser; kill(): void }> | undefined;

/**
 * Opens a page in a new browser context (cookies, storage and cache of its own) of this test
 * file's one Chromium, launched on first use: a launch costs about as much CPU as a page test
 * itself. `close()` ends the context; the browser is killed when the test process exits. It
 * outlives the test that launched it, so tests that use it set `sanitizeOps` and
 * `sanitizeResources` to false.
 * @param name names the screenshot folder (`browser-<name>-XXXX` under the temp dir).
 * @throws Error naming the executable when Chromium is missing or does not start.
 */
export async function openSharedBrowser(name: string): Promise<BrowserSession> {
  fileBrowser ??= launch().then(({ browser, kill }) => {
    globalThis.addEventListener("unload", kill);
    return { browser, kill };
  });
  const { browser } = await fileBrowser;
  const context = await browser.createBrowserContext();
  return await session(name, browser, context, await context.newPage(), () => context.close());
}

/** Chromium flags beyond puppeteer's defaults. */
const CHROMIUM_ARGS = [
  // CI runs as root, where Chromium's sandbox cannot start; /dev/shm is small in containers.
  "--no-sandbox",
  "--disable-dev-shm-usage",
  // No GPU here: draw in software inside the browser process rather than in a GPU process of its own.
  "--disable-gpu",
  "--in-process-gpu",
  "--disable-software-rasterizer",
  "--no-first-run",
  "--no-default-browser-check",
];

async function launch(
  hosts?: Record<string, string>,
): Promise<{ browser: Browser; close(): Promise<void>; kill(): void }> {
  const executablePath = Deno.env.get("CHROMIUM_PATH") ?? DEFAULT_CHROMIUM;
  try {
    await Deno.stat(executablePath);
  } catch {
    throw new Error(
      `Chromium not found at ${executablePath}: install it (apt-get install -y chromium) or set CHROMIUM_PATH`,
    );
  }
  // Our own profile folder, so it is removed however the browser ends.
  const userDataDir = await Deno.makeTempDir({ prefix: "browser-profile-" });
  const removeProfile = () => Deno.remove(userDataDir, { recursive: true }).catch(() => {});
  let browser: Browser;
  try {
    browser = await puppeteer.launch({
      executablePath,
      headless: true,
      userDataDir,
      args: [...CHROMIUM_ARGS, ...hostRules(hosts)],
      timeout: 30_000,
    });
  } catch (err) {
    await removeProfile();
    throw new Error(`Chromium at ${executablePath} did not start: ${(err as Error).message}`);
  }
  return {
    browser,
    async close() {
      await browser.close();
      await removeProfile();
    },
    kill() {
      // At exit nothing async runs: end the browser's whole process group at once.
      const pid = browser.process()?.pid;
      if (pid) {
        try {
          Deno.kill(-pid, "SIGKILL");
        } catch {
          // already gone
        }
      }
      try {
        Deno.removeSync(userDataDir, { recursive: true });
      } catch {
        // a process still writing; the temp dir is cleaned with the machine
      }
    },
  };
}

async function session(
  name: string,
  browser: Browser,
  context: BrowserContext,
  page: Page,
  end: () => Promise<void>,
): Promise<BrowserSession> {
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  const shotsDir = await Deno.makeTempDir({ prefix: `browser-${slug}-` });
  await page.setViewport({ width: 900, height: 700 });
  page.setDefaultTimeout(15_000);
  const shots: string[] = [];
  let closed: Promise<void> | undefined;
  const close = () => closed ??= end();
  /** Of the element `selector` names, else of the whole page or of the window's screen. */
  const take = async (step: string, { selector, fullPage }: { selector?: string; fullPage?: boolean }) => {
    const file = `${shotsDir}/${String(shots.length + 1).padStart(2, "0")}-${
      step.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "")
    }.png`;
    // optimizeForSpeed: a quicker PNG encoding (larger file, same pixels).
    const options = { path: file as `${string}.png`, optimizeForSpeed: true };
    if (selector) await (await page.waitForSelector(selector))!.screenshot(options);
    else await page.screenshot({ ...options, fullPage });
    shots.push(file);
    return file;
  };
  return {
    browser,
    context,
    page,
    shotsDir,
    shots,
    shot: (step, selector) => take(step, { selector, fullPage: true }),
    screen: (step) => take(step, { fullPage: false }),
    close,
    [Symbol.asyncDispose]: close,
  };
}

function hostRules(hosts: Record<string, string> = {}): string[] {
  const rules = Object.entries(hosts).map(([name, target]) => `MAP ${name} ${target}`);
  return rules.length ? [`--host-resolver-rules=${rules.join(", ")}`] : [];
}

/** A request handler; `info` carries the client address (rate limits key on it). */
type LocalHandler = (req: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>) => Response | Promise<Response>;

/** Serves `handler` on 127.0.0.1 at a free port; the URL is known before the handler is set. */
export function serveLocal(): {
  url: string;
  setHandler(h: LocalHandler): void;
  close(): Promise<void>;
} & AsyncDisposable {
  let handler: LocalHandler = () => new Response("not ready", { status: 503 });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req, info) => handler(req, info));
  const close = () => server.shutdown();
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    setHandler(h) {
      handler = h;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
