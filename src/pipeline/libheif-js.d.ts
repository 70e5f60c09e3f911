/**
 * libheif-js: libheif compiled to WebAssembly, with its decoders (libde265 for HEVC) inside;
 * `wasm-bundle` is the module already instantiated, the `.wasm` file inlined. Only what
 * `heic-decoder.ts` uses is declared.
 */
declare module 'libheif-js/wasm-bundle.js' {
  /** One image of a file, as `HeifDecoder.decode` lists them. */
  interface HeifImage {
    get_width(): number;
    get_height(): number;
    /**
     * Decodes the image as interleaved RGBA (its rotation and mirroring applied) into
     * `target.data`, which must hold `width × height × 4` bytes; calls back with the target,
     * or with null when the image cannot be decoded.
     */
    display(target: { data: Uint8Array; width: number; height: number }, done: (shown: unknown) => void): void;
    /** Releases the image's handle in the WebAssembly memory. */
    free(): void;
  }
  interface HeifDecoder {
    /** Reads a file (copied into the WebAssembly memory); its top-level images, or none when it cannot be read. */
    decode(file: Uint8Array): HeifImage[];
    /** The decoder's context, to delete once its images are freed. */
    decoder: { delete(): void };
  }
  interface LibHeif {
    HeifDecoder: new () => HeifDecoder;
    /** The module's WebAssembly memory as bytes: its length is what the decoder holds. */
    HEAPU8: Uint8Array;
  }
  const libheif: LibHeif;
  export default libheif;
}
