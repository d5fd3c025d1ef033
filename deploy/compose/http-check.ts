/**
 * The healthcheck of the Node containers in docker-compose.yml (the images hold no curl or wget):
 *
 *   node deploy/compose/http-check.ts http://127.0.0.1:8081/readyz
 *
 * Exit 0 when the URL answers 2xx within the timeout (default 3 s), 1 otherwise, with one line saying why
 * (`docker inspect` shows it under State.Health). 2 for a bad command line.
 */

/** Fetches `url`; resolves with undefined when it answered 2xx, else with why not. */
export async function checkUrl(url: string, timeoutMs = 3_000): Promise<string | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    const body = (await res.text()).trim().slice(0, 200);
    return res.ok ? undefined : `cannot get 2xx from ${url}: it answered ${res.status}: ${body}`;
  } catch (error) {
    // fetch says only "fetch failed"; the reason (ECONNREFUSED, a timeout, ...) is in its cause.
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return `cannot reach ${url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`;
  }
}

if (import.meta.main) {
  const [url, ...rest] = process.argv.slice(2);
  if (!url || rest.length > 0 || url === "--help" || url === "-h") {
    process.stderr.write("Usage: node deploy/compose/http-check.ts URL   (exit 0 when URL answers 2xx)\n");
    process.exitCode = url === "--help" || url === "-h" ? 0 : 2;
  } else {
    const problem = await checkUrl(url);
    if (problem) process.stderr.write(`http-check: ${problem}\n`);
    process.exitCode = problem ? 1 : 0;
  }
}
