/** The parts of the espeak-ng package (an Emscripten build of the eSpeak NG command line) the demo uses. */
declare module 'espeak-ng' {
  interface ESpeakNgModule {
    FS: { writeFile(path: string, data: string): void; readFile(path: string): Uint8Array };
  }
  interface ESpeakNgOptions {
    arguments: string[];
    preRun?: ((module: ESpeakNgModule) => void)[];
    /** The .wasm file's bytes, so the module does not look for the file itself. */
    wasmBinary?: Uint8Array;
    print?: (line: string) => void;
    printErr?: (line: string) => void;
  }
  export default function ESpeakNg(options: ESpeakNgOptions): Promise<ESpeakNgModule>;
}
