// s3rver ships no types: the little of it the tests use (test/recordings-helpers.ts).
declare module 's3rver' {
  class S3rver {
    constructor(options: object);
    run(): Promise<{ port: number }>;
    close(): Promise<void>;
  }

  export = S3rver;
}
