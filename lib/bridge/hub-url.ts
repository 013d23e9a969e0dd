/**
 * Where the hub is. Users give the hub's address as `serve --http` prints
 * it (http://127.0.0.1:7077); the MCP endpoint is /mcp below it. A URL that
 * already ends in /mcp is taken as the endpoint itself, and a path prefix
 * (a hub behind a proxy at https://example.org/relay/) is kept.
 */
export interface HubUrl {
  /** The hub's base, without a trailing slash: where /healthz and /relays live. */
  base: string;
  /** POST here for MCP. */
  mcp: URL;
}

/** The hub's URLs, or null when `text` is not an http(s) URL. */
export function parseHubUrl(text: string): HubUrl | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  url.search = '';
  url.hash = '';
  const path = url.pathname.replace(/\/+$/, '');
  const basePath = path.endsWith('/mcp') ? path.slice(0, -'/mcp'.length) : path;
  const base = `${url.origin}${basePath}`;
  return { base, mcp: new URL(`${base}/mcp`) };
}
