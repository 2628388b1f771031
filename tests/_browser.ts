/**
 * A real headless Chromium for page tests: Debian's `/usr/bin/chromium` (or `CHROMIUM_PATH`)
 * driven by puppeteer-core. A browser that cannot start fails the test; it is never skipped.
 *
 * @example
 * await using b = await openBrowser("claim page");
 * await b.page.goto(url);
 * await b.shot("code form");           // writes 01-code-form.png under b.shotsDir
 */
import puppeteer, { type Browser, type Page } from "puppeteer-core";

/** Where Debian installs Chromium (`apt-get install -y chromium`; `.ci/run` does it when missing). */
export const DEFAULT_CHROMIUM = "/usr/bin/chromium";

/** One browser with one page, and the screenshots taken so far. */
export interface BrowserSession extends AsyncDisposable {
  browser: Browser;
  page: Page;
  /** The temp folder this session's screenshots go to (kept after the test for a human to look at). */
  shotsDir: string;
  /** Screenshot paths in the order taken. */
  shots: string[];
  /** Takes a full-page screenshot named after the step (`NN-step-name.png`) and returns its path. */
  shot(step: string): Promise<string>;
  close(): Promise<void>;
}

/**
 * Launches headless Chromium and opens a page.
 * @param name names the screenshot folder (`browser-<name>-XXXX` under the temp dir).
 * @param opts.hosts host names to send to a local address, e.g. `{ "store.test": "127.0.0.1:41234" }`
 *   (the page keeps its URL and `Host` header; Chromium connects to the local server).
 * @throws Error naming the executable when Chromium is missing or does not start.
 */
export async function openBrowser(
  name: string,
  opts: { hosts?: Record<string, string> } = {},
): Promise<BrowserSession> {
  const executablePath = Deno.env.get("CHROMIUM_PATH") ?? DEFAULT_CHROMIUM;
  try {
    await Deno.stat(executablePath);
  } catch {
    throw new Error(
      `Chromium not found at ${executablePath}: install it (apt-get install -y chromium) or set CHROMIUM_PATH`,
    );
  }
  let browser: Browser;
  try {
    browser = await puppeteer.launch({
      executablePath,
      headless: true,
      // CI runs as root, where Chromium's sandbox cannot start; /dev/shm is small in containers.
      args: [
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--no-default-browser-check",
        ...hostRules(opts.hosts),
      ],
      timeout: 30_000,
    });
  } catch (err) {
    throw new Error(`Chromium at ${executablePath} did not start: ${(err as Error).message}`);
  }
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  const shotsDir = await Deno.makeTempDir({ prefix: `browser-${slug}-` });
  const page = await browser.newPage();
  await page.setViewport({ width: 900, height: 700 });
  page.setDefaultTimeout(15_000);
  const shots: string[] = [];
  const close = async () => {
    await browser.close();
  };
  return {
    browser,
    page,
    shotsDir,
    shots,
    async shot(step) {
      const file = `${shotsDir}/${String(shots.length + 1).padStart(2, "0")}-${
        step.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "")
      }.png`;
      await page.screenshot({ path: file as `${string}.png`, fullPage: true });
      shots.push(file);
      return file;
    },
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
