/**
 * A measuring aid for `npm run bench:idle`, never loaded by the controller otherwise: a node `--import` that
 * replaces the global `fetch` with one over node:http(s) (keep-alive agents), enough for the Shapes cloud
 * client (controller/src/shapes/cloud/client.ts: method, headers, body, signal; status, ok, statusText,
 * headers.get, text(), json(), and the body as an async iterable for the change feed). With it the process
 * never loads Node's bundled undici and its llhttp WebAssembly, so the difference it makes to the idle RSS is
 * what undici costs (issue 31):
 *
 *   npm run bench:idle -- --node-flag=--max-semi-space-size=2 --node-flag=--v8-pool-size=1 --node-flag=--import --node-flag=$PWD/bench/idle-fetch-over-http.js
 *
 * (an absolute path: node resolves `--import` from the controller's working folder, not the repository)
 *
 * JavaScript, not TypeScript: a .ts here would load Node's type stripping, which the build never does.
 */
import http from "node:http";
import https from "node:https";

const agents = {
  "http:": new http.Agent({ keepAlive: true }),
  "https:": new https.Agent({ keepAlive: true }),
};

globalThis.fetch = (input, init = {}) =>
  new Promise((resolve, reject) => {
    const url = new URL(String(input));
    const client = url.protocol === "https:" ? https : http;
    const req = client.request(
      url,
      {
        method: init.method ?? "GET",
        headers: init.headers,
        signal: init.signal,
        agent: agents[url.protocol],
      },
      (res) => {
        const text = async () => {
          const chunks = [];
          for await (const chunk of res) chunks.push(chunk);
          return Buffer.concat(chunks).toString("utf8");
        };
        const status = res.statusCode ?? 0;
        resolve({
          status,
          ok: status >= 200 && status < 300,
          statusText: res.statusMessage ?? "",
          headers: {
            get: (name) => {
              const value = res.headers[name.toLowerCase()];
              return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
            },
          },
          body: res,
          text,
          json: async () => JSON.parse(await text()),
        });
      },
    );
    req.on("error", reject);
    if (init.body !== undefined && init.body !== null) req.write(init.body);
    req.end();
  });
