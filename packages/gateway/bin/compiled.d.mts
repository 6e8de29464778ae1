/** Types of compiled.mjs (plain JavaScript: it runs before anything is compiled). */
/** The bundle's path (packages/gateway/dist/switchboard.cjs). */
export declare const BUNDLE: string
/** V8's code cache of the bundle (packages/gateway/dist/switchboard.cjs.v8cache). */
export declare const CODE_CACHE: string
/** True when the bundle exists, no source is newer, and it is built in this version's form. */
export declare function bundleIsFresh(): boolean
/** Whether the bundle at `path` is its own function (this version's form); one of before is built again. */
export declare function isWrapped(path: string): boolean
/** Builds the bundle; resolves to its path. */
export declare function buildBundle(): Promise<string>
/** The bundle's path, built first when it is missing or older than a source. */
export declare function ensureBundle(): Promise<string>
/** Runs the bundle with V8's code cache when there is one for its build. */
export declare function loadBundle(path?: string): {
  /** The bundle's exports (the CLI's: `main`, ...). */
  exports: Record<string, unknown>
  /** Whether V8 took the code cache. */
  cached: boolean
  /** Writes the code cache from what has run so far (`loaded`: the modules; `started`: a node's start), unless one as good is there; false when it did not. */
  saveCodeCache(level?: 'loaded' | 'started'): boolean
}
