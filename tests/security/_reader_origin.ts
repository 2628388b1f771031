import { newId } from "../../core/ids.ts";
import type { TestWorld } from "../_helpers.ts";

/** The page origin of the keyless event tests. */
export const READER_ORIGIN = "https://reader.example";

/**
 * Gives `w` a widget that allows {@link READER_ORIGIN}: `POST /v1/events` refuses a keyless batch
 * from an origin no widget allows before it reads the body, so a test of what reading a hostile
 * body does sends it from an allowed origin.
 */
export async function allowReaderOrigin(w: TestWorld): Promise<void> {
  const { tenantId } = await w.tenantWithKey("Reader Origin");
  await w.deps.repos.widgets.create({
    id: newId("wd", w.clock),
    tenantId,
    name: "Ask AI",
    aiModelId: "am_01JX0000000000000000000001",
    allowedOrigins: [READER_ORIGIN],
    deploymentType: "embed",
    createdAt: w.clock.now().toISOString(),
  });
}
