/** A file that cannot be read, for a reason its owner can act on (it becomes the source's `error`). */
export class FileReadError extends Error {}
