/**
 * Registering, listing and removing a data model's sources, and its retention: the rules the
 * HTTP routes and the admin commands share.
 */
import { dataModelNotFound } from "../errors.ts";
import { SourceFormatError, sourcesErrors } from "./errors.ts";
import { SafeFetcher, SafeFetchError } from "../net/mod.ts";
import type { DataModel, EntityRepo } from "../store/mod.ts";
import { isSitemapIndex, SOURCE_MEDIA_TYPES, sourceText } from "./document.ts";
import { type SourceParser, SourceParserBusyError } from "./parser.ts";
import {
  type SourceInput,
  SourceLimitError,
  type SourceLimits,
  type SourceRepo,
  type SourceView,
  sourceView,
} from "./source.ts";

/** Longest retention a data model may set (ten years). */
export const MAX_RETENTION_DAYS = 3650;

/** Source management over the repos and the SSRF-guarded fetcher. */
export class SourceService {
  constructor(
    private readonly deps: {
      sources: SourceRepo;
      dataModels: EntityRepo<DataModel>;
      fetcher: SafeFetcher;
      limits: SourceLimits;
      /** Bytes read when a source is probed at registration. */
      probeMaxBytes: number;
      /** Deadline of the probe's fetch, its body included. */
      probeTimeoutMs: number;
      /** Where the probe's document is parsed (off the main thread). */
      parser: SourceParser;
    },
  ) {}

  get limits(): SourceLimits {
    return this.deps.limits;
  }

  /**
   * Registers a source after checking it: the URL must pass the SSRF guard, answer, and read
   * as the declared type. Its first poll is due at once.
   * @throws {AppError} 422 for a blocked, unreachable or unreadable URL; 409 at the cap or for a duplicate
   */
  async add(dm: DataModel, input: SourceInput): Promise<SourceView> {
    let url: string;
    try {
      const u = new URL(input.url);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("scheme");
      u.hash = "";
      url = u.toString();
    } catch {
      throw sourcesErrors.invalid_url();
    }
    const room = { dataModelId: dm.id, url, type: input.type };
    // A duplicate or a data model at its cap is refused before the probe: no outbound fetch for a
    // source that cannot be added. The add below checks again, atomically.
    await this.#limitErrors(() => this.deps.sources.assertRoom(room, this.deps.limits.maxPerDataModel));
    try {
      const res = await this.deps.fetcher.fetch(url, {
        accept: SOURCE_MEDIA_TYPES[input.type],
        maxBytes: this.deps.probeMaxBytes,
        timeoutMs: this.deps.probeTimeoutMs,
      });
      const text = await sourceText(res, this.deps.probeMaxBytes);
      const caller = `tenant:${dm.tenantId}`;
      if (input.type === "sitemap" && isSitemapIndex(text)) {
        await this.deps.parser.sitemapIndex(caller, text, res.url, 1);
      } else await this.deps.parser.document(caller, input.type, text, 1);
    } catch (err) {
      if (err instanceof SafeFetchError) {
        const refused = err.code === "blocked_address" || err.code === "invalid_url";
        throw (refused ? sourcesErrors.url_blocked : sourcesErrors.source_unreachable)({ why: err.message }, {
          cause: err,
        });
      }
      if (err instanceof SourceFormatError) {
        throw sourcesErrors.source_unreadable({ type: input.type, why: err.message });
      }
      if (err instanceof SourceParserBusyError) {
        throw sourcesErrors.source_check_busy({
          headers: { "Retry-After": String(err.retryAfterS) },
        });
      }
      throw err;
    }
    const source = await this.#limitErrors(() =>
      this.deps.sources.add({
        ...room,
        tenantId: dm.tenantId,
        intervalS: input.interval_s,
        fetchPages: input.fetch_pages ?? input.type === "sitemap",
      }, this.deps.limits.maxPerDataModel)
    );
    return sourceView(source, (await this.deps.sources.state(source.id)).value);
  }

  /** Runs `work`, turning a {@link SourceLimitError} into the public 409 it stands for. */
  async #limitErrors<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof SourceLimitError) {
        throw err.code === "source_exists"
          ? sourcesErrors.source_exists()
          : sourcesErrors.source_limit_reached({ max: this.deps.limits.maxPerDataModel });
      }
      throw err;
    }
  }

  /** The data model's sources with their status. */
  async list(dm: DataModel): Promise<SourceView[]> {
    const sources = await this.deps.sources.list(dm.id);
    const states = await this.deps.sources.states(sources.map((s) => s.id));
    return sources.map((s, i) => sourceView(s, states[i] ?? null));
  }

  /**
   * Removes a source of the data model.
   * @throws {AppError} 404 when the data model has no such source
   */
  async remove(dm: DataModel, sourceId: string): Promise<void> {
    const source = await this.deps.sources.get(sourceId);
    if (!source || source.dataModelId !== dm.id || !(await this.deps.sources.remove(source))) {
      throw sourcesErrors.source_not_found();
    }
  }

  /**
   * Sets (or with null clears) the data model's retention in days, on the record as stored (a
   * concurrent change of its other fields, such as its licence, stays).
   * @throws {AppError} 404 when the data model is gone
   */
  async setRetention(dm: DataModel, maxAgeDays: number | null): Promise<DataModel> {
    const updated = await this.deps.dataModels.change(dm.id, (current) => {
      const next: DataModel = { ...current };
      if (maxAgeDays === null) delete next.maxAgeDays;
      else next.maxAgeDays = maxAgeDays;
      return next;
    });
    if (!updated) throw dataModelNotFound();
    return updated;
  }
}
