/** @echogarden/fvad-wasm ships no types: its default export creates the Emscripten module (typed where it is used). */
declare module '@echogarden/fvad-wasm' {
  const create: () => Promise<unknown>;
  export default create;
}
