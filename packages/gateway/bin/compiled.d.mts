/** Types of compiled.mjs (plain JavaScript: it runs before anything is compiled). */
/** The bundle's path (packages/gateway/dist/switchboard.mjs). */
export declare const BUNDLE: string
/** True when the bundle exists and no source is newer. */
export declare function bundleIsFresh(): boolean
/** Builds the bundle; resolves to its path. */
export declare function buildBundle(): Promise<string>
/** The bundle's path, built first when it is missing or older than a source. */
export declare function ensureBundle(): Promise<string>
