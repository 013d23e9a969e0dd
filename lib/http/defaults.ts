/**
 * The hub's defaults, in a module with no dependencies, so that `serve`
 * can print them in --help without loading the hub (stdio must start fast).
 */
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 7077;
