/** Shared pieces of the payproxy tests: signing helpers, an allowance peer, in-test search and answer services. */
import type { Answer, AnswerContext, AnswerService } from "../../core/answer/types.ts";
import type { Clock } from "../../core/clock.ts";
import { unixSeconds } from "../../core/clock.ts";
import { signRequest } from "../../core/payproxy/signature.ts";
import type { IngestReport, Search } from "../../core/search/engine.ts";
import type { RetrievedArticle, SearchContext, SearchRequest, SearchResponse } from "../../core/search/types.ts";
import type { AiModel, DataModel } from "../../core/store/models.ts";
import { startServer } from "../../routes/server.ts";

/** Options for {@link signedInit}. */
export interface SignedInitOptions {
  secret: string;
  kid: string;
  clock: Clock;
  /** Absolute URL or path plus query. */
  url: string;
  body?: string | Uint8Array;
  agentId?: string;
  requestId?: string;
  /** Seconds added to the clock's time for `t`. */
  tOffset?: number;
  method?: string;
}

/** A RequestInit for a signed JSON POST. */
export async function signedInit(o: SignedInitOptions): Promise<RequestInit> {
  const body = o.body ?? "";
  const signed = await signRequest({
    secret: o.secret,
    kid: o.kid,
    t: unixSeconds(o.clock) + (o.tOffset ?? 0),
    method: o.method ?? "POST",
    url: o.url.startsWith("/") ? `http://svc.test${o.url}` : o.url,
    body,
    requestId: o.requestId ?? crypto.randomUUID(),
    agentId: o.agentId,
  });
  return {
    method: o.method ?? "POST",
    headers: { ...signed.headers, "content-type": "application/json" },
    body: body as BodyInit,
  };
}

/** What the allowance peer does with the next calls. */
export type PeerMode = "allow" | "deny" | "slow" | "error500" | "notfound" | "garbage";

/** A request the allowance peer received. */
export interface PeerCall {
  url: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

/** A small payment-layer stand-in on 127.0.0.1 answering `/internal/allowance` per `mode`. */
export function startAllowancePeer(initial: PeerMode = "allow") {
  const calls: PeerCall[] = [];
  const state = { mode: initial };
  const stopping = new AbortController();
  const server = startServer(async (req) => {
    const body = new Uint8Array(await req.arrayBuffer());
    calls.push({ url: req.url, headers: Object.fromEntries(req.headers), body });
    if (new URL(req.url).pathname !== "/internal/allowance") return new Response("no such route", { status: 404 });
    switch (state.mode) {
      case "allow":
        return Response.json({ allowed: true });
      case "deny":
        return Response.json({ allowed: false });
      case "slow":
        // Holds the answer until the peer closes (or 10 s), so the client's timeout decides.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 10_000);
          stopping.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            resolve();
          });
        });
        return Response.json({ allowed: false });
      case "error500":
        return new Response("upstream exploded", { status: 503 });
      case "notfound":
        return Response.json({ error: "service_not_found" }, { status: 404 });
      case "garbage":
        return new Response("<html>ok</html>", { status: 200 });
    }
  });
  const close = () => {
    stopping.abort();
    return server.shutdown(1000).then(() => {});
  };
  return {
    url: server.url,
    calls,
    set mode(m: PeerMode) {
      state.mode = m;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** An address on 127.0.0.1 where nothing listens (a server was bound there and closed). */
export async function deadAddress(): Promise<string> {
  const server = startServer(() => new Response("bye"));
  const url = server.url;
  await server.shutdown(100);
  return url;
}

/**
 * An in-test search over a fixed list of articles: ranks by how many query words a title holds.
 * It records each call so tests can see what reached the pipeline. It takes no articles.
 */
export class FixedArticlesSearchService implements Search {
  readonly calls: { dataModelId: string; request: SearchRequest; context: SearchContext }[] = [];
  failWith?: Error;

  constructor(readonly articles: { title: string; url: string; site: string }[]) {}

  recommend(dataModel: DataModel, request: SearchRequest, context: SearchContext): Promise<SearchResponse> {
    this.calls.push({ dataModelId: dataModel.id, request, context });
    if (this.failWith) return Promise.reject(this.failWith);
    const words = request.query.toLowerCase().split(/\s+/);
    const results = this.articles
      .map((a) => ({ a, score: words.filter((w) => a.title.toLowerCase().includes(w)).length }))
      .filter((r) => r.score > 0)
      .sort((x, y) => y.score - x.score)
      .slice(0, request.similarity_top_k ?? 9)
      .map(({ a, score }) => ({ title: a.title, url: a.url, site: a.site, score }));
    return Promise.resolve({ status: "success", response: { query: request.query, results, message: "" } });
  }

  retrieve(_dataModelIds: string[], _query: string): Promise<RetrievedArticle[]> {
    return Promise.resolve([]);
  }

  ingest(_dataModel: DataModel, _items: unknown[]): Promise<IngestReport> {
    return Promise.reject(new Error("the fixed-articles search takes no articles"));
  }

  start(): Promise<void> {
    return Promise.resolve();
  }

  count(_dataModelId: string): Promise<number> {
    return Promise.resolve(this.articles.length);
  }

  countServed(dataModelId: string): Promise<number> {
    return this.count(dataModelId);
  }

  articleByUrl(_dataModelId: string, _url: string): Promise<null> {
    return Promise.resolve(null);
  }

  topCategories(): Promise<{ category: string; count: number }[]> {
    return Promise.resolve([]);
  }

  trimChanges(_dataModelId: string): Promise<number> {
    return Promise.resolve(0);
  }

  expire(_dataModelId: string, _cutoffUnix: number): Promise<number> {
    return Promise.resolve(0);
  }

  watch(): void {}

  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** An in-test AnswerService that echoes the query: text models in `message`, structured ones in a payload. */
export class EchoAnswerService implements AnswerService {
  readonly calls: { modelId: string; query: string; context: AnswerContext }[] = [];

  answer(model: AiModel, query: string, context: AnswerContext): Promise<Answer> {
    this.calls.push({ modelId: model.id, query, context });
    const message = `Answer to: ${query}`;
    if (model.output.kind === "structured") {
      return Promise.resolve({ kind: "structured", payload: { answer: message, confidence: 0.5 }, message });
    }
    return Promise.resolve({ kind: "text", message, citations: [] });
  }
}
