/** The images room's face: what other rooms and the routes may use. */

export { ImageBusyError, type ImageFetcher, ImageOriginError, ImageService, MIN_DIMENSION } from "./image_service.ts";
