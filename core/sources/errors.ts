/** Errors of the sources room whose messages are written to be shown (poll status, 422 bodies). */

/** A document that is not what its source type promises, or that the guards refuse. */
export class SourceFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SourceFormatError";
  }
}
