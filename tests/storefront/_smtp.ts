import { SMTPServer } from "smtp-server";
import { within } from "../_basics.ts";
import { concatBytes } from "../../core/bytes.ts";

/** A message received by the local SMTP server. */
export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

/** A real SMTP server (npm smtp-server) on 127.0.0.1, no TLS, no auth: the test's mail sink. */
export interface LocalSmtp extends AsyncDisposable {
  url: string;
  messages: ReceivedMail[];
  /** Resolves when at least `n` messages arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

export async function startLocalSmtp(): Promise<LocalSmtp> {
  const messages: ReceivedMail[] = [];
  const waiters: (() => void)[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    // deno-lint-ignore no-explicit-any
    onData(stream: any, session: any, callback: (err?: Error | null) => void) {
      const chunks: Uint8Array[] = [];
      stream.on("data", (c: Uint8Array) => chunks.push(c));
      stream.on("end", () => {
        const raw = new TextDecoder().decode(concatBytes(chunks));
        messages.push({
          from: session.envelope.mailFrom?.address ?? "",
          // deno-lint-ignore no-explicit-any
          to: session.envelope.rcptTo.map((r: any) => r.address),
          raw,
        });
        for (const w of waiters.splice(0)) w();
        callback(null);
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve((server.server.address() as { port: number }).port));
  });
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return {
    url: `smtp://127.0.0.1:${port}`,
    messages,
    async waitFor(n, timeoutMs = 5000) {
      // Woken by each arriving message; the one timer only bounds a wait for mail that never comes.
      const arrived = new Promise<void>((resolve) => {
        const check = () => messages.length >= n ? resolve() : void waiters.push(check);
        check();
      });
      await within(arrived, timeoutMs, () => `expected ${n} messages, got ${messages.length}`);
      return messages;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}
