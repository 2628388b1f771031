import type { AppError } from "../errors.ts";
import { payproxyErrors } from "./errors.ts";
import type { AiModel, DataModel } from "../store/mod.ts";

/** Looks models up by id across tenants (the model repositories). */
interface ModelsById<T> {
  get(id: string): Promise<T | null>;
}

/**
 * The data model a payproxy search may reach: it exists and its owner put it on the marketplace.
 * @throws AppError 404 with no public detail; the cause says which gate refused (logged only).
 */
export async function marketplaceDataModel(dataModels: ModelsById<DataModel>, id: string): Promise<DataModel> {
  const dm = await dataModels.get(id);
  if (!dm || !dm.marketplace) throw modelNotFound(id, dm);
  return dm;
}

/**
 * The AI model a payproxy answer may reach: it exists, is not private and is on the marketplace.
 * @throws AppError 404 with no public detail; the cause says which gate refused (logged only).
 */
export async function marketplaceAiModel(aiModels: ModelsById<AiModel>, id: string): Promise<AiModel> {
  const model = await aiModels.get(id);
  if (!model || model.private || !model.marketplace) throw modelNotFound(id, model);
  return model;
}

/** 404 with no body; the log says which gate refused. */
function modelNotFound(id: string, model: DataModel | AiModel | null): AppError {
  const why = !model
    ? `model ${id} does not exist`
    : "private" in model && model.private
    ? `model ${id} is private`
    : `model ${id} is not marketplace-enabled`;
  return payproxyErrors.model_not_found({ cause: new Error(why) });
}
