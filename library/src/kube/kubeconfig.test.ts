/**
 * The lean kubeconfig loader against client-node's own loader on the same files: every form a controller
 * meets (client certificates from files or data, tokens and token files, the CA, insecure, the namespace,
 * several KUBECONFIG files, relative paths, in-cluster), the order it looks in, the kubeconfigs it hands to
 * client-node (exec plugins, auth providers), the bad ones (one line each), the token file re-read when it
 * rotates, and that loading it imports nothing of client-node.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { KubeConfig } from "@kubernetes/client-node";
import { afterAll, describe, expect, test } from "vitest";
import { stringify } from "yaml";
import {
  connectKubeconfig,
  connectWithClientNode,
  type KubeConnection,
  KubeconfigError,
  kubeConnectionOf,
  loadKubeconfig,
  type LoadKubeconfigOptions,
} from "./kubeconfig.ts";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const dirs: string[] = [];
const b64 = (text: string) => Buffer.from(text).toString("base64");
const CA = "-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n";
const CERT = "-----BEGIN CERTIFICATE-----\nclient\n-----END CERTIFICATE-----\n";
const KEY = "-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n";

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A temp folder holding `files` (paths relative to it; folders made); returns its absolute path. */
function folder(files: Record<string, string | undefined>): string {
  const dir = mkdtempSync(path.join(tmpdir(), "kubeconfig-test-"));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    if (content !== undefined) writeFileSync(path.join(dir, name), content);
  }
  return dir;
}

/** A kubeconfig with one context `ctx` on cluster `c` and user `u`, with these fields. */
function kubeconfig(
  cluster: Record<string, unknown>,
  user: Record<string, unknown> | undefined,
  context: Record<string, unknown> = {},
): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "c", cluster: { server: "https://10.0.0.1:6443", ...cluster } }],
    ...(user ? { users: [{ name: "u", user }] } : {}),
    contexts: [{ name: "ctx", context: { cluster: "c", ...(user ? { user: "u" } : {}), ...context } }],
    "current-context": "ctx",
  });
}

/** What a connection says: where, and the credentials of a request (bytes as text). */
async function described(connection: KubeConnection) {
  const creds = await connection.credentials();
  return {
    server: connection.server,
    namespace: connection.namespace,
    context: connection.contextName,
    cluster: connection.clusterName,
    user: connection.userName,
    headers: creds.headers,
    ca: creds.ca?.toString(),
    cert: creds.cert?.toString(),
    key: creds.key?.toString(),
    rejectUnauthorized: creds.rejectUnauthorized,
    servername: creds.servername,
  };
}

function lean(options: LoadKubeconfigOptions): KubeConnection {
  const verdict = loadKubeconfig(options);
  if (verdict.kind !== "lean") throw new Error(`expected lean, got ${JSON.stringify(verdict)}`);
  return verdict.connection;
}

/** Runs `fn` with process.env changed by `env` (undefined deletes), restored after. */
function withEnv<T>(env: Record<string, string | undefined>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** client-node's loader on the same input: loadFromFile, or loadFromDefault with KUBECONFIG (first file's context). */
function clientNode(how: { file: string } | { KUBECONFIG: string }): KubeConfig {
  const kc = new KubeConfig();
  if ("file" in how) kc.loadFromFile(how.file);
  else withEnv({ KUBECONFIG: how.KUBECONFIG }, () => kc.loadFromDefault(undefined, true));
  return kc;
}

describe("loadKubeconfig: each form, the same as client-node's loader on the same files", () => {
  test.each([
    {
      reason: "client certificate and key from files relative to the kubeconfig's folder, CA from a file",
      files: {
        "cfg/config": kubeconfig(
          { "certificate-authority": "pki/ca.crt" },
          { "client-certificate": "pki/client.crt", "client-key": "../key/client.key" },
        ),
        "cfg/pki/ca.crt": CA,
        "cfg/pki/client.crt": CERT,
        "key/client.key": KEY,
      },
      expected: { ca: CA, cert: CERT, key: KEY, headers: {} },
    },
    {
      reason: "client certificate, key and CA as data (base64)",
      files: {
        "cfg/config": kubeconfig(
          { "certificate-authority-data": b64(CA) },
          { "client-certificate-data": b64(CERT), "client-key-data": b64(KEY) },
        ),
      },
      expected: { ca: CA, cert: CERT, key: KEY, headers: {} },
    },
    {
      reason: "a bearer token, insecure-skip-tls-verify, a server URL with a path and a trailing slash",
      files: {
        "cfg/config": kubeconfig(
          { server: "https://proxy.example:8443/k8s/c1/", "insecure-skip-tls-verify": true },
          { token: "abc.def" },
        ),
      },
      expected: {
        server: "https://proxy.example:8443/k8s/c1",
        rejectUnauthorized: false,
        headers: { Authorization: "Bearer abc.def" },
      },
    },
    {
      reason: "a token file (client-node's `token-file` spelling, absolute path)",
      files: { "cfg/config": "", "cfg/token": "from-a-file" },
      tokenFileField: "token-file",
      expected: { headers: { Authorization: "Bearer from-a-file" } },
    },
    {
      reason: "the context's namespace, tls-server-name and impersonation (`as`)",
      files: {
        "cfg/config": kubeconfig(
          { "certificate-authority-data": b64(CA), "tls-server-name": "kubernetes.default" },
          { token: "t", as: "jane" },
          { namespace: "team-a" },
        ),
      },
      expected: {
        namespace: "team-a",
        ca: CA,
        servername: "kubernetes.default",
        headers: { Authorization: "Bearer t", "Impersonate-User": "jane" },
      },
    },
  ])("$reason", async ({ files, expected, tokenFileField }) => {
    const dir = folder(files);
    const file = path.join(dir, "cfg/config");
    if (tokenFileField) {
      writeFileSync(file, kubeconfig({}, { [tokenFileField]: path.join(dir, "cfg/token") }));
    }
    const ours = await described(lean({ path: file }));
    const theirs = await described(kubeConnectionOf(clientNode({ file })));
    expect(ours).toEqual(theirs);
    expect(ours).toMatchObject(expected);
    expect(ours.server).toBe(expected.server ?? "https://10.0.0.1:6443");
  });

  test("a context without a user: anonymous, no Authorization, the CA still used (client-node drops the CA then)", async () => {
    const dir = folder({ config: kubeconfig({ "certificate-authority-data": b64(CA) }, undefined) });
    const ours = await described(lean({ path: path.join(dir, "config") }));
    expect(ours).toMatchObject({ ca: CA, headers: {}, user: undefined });
    expect(
      (await described(kubeConnectionOf(clientNode({ file: path.join(dir, "config") })))).ca,
    ).toBeUndefined();
  });

  test("a relative tokenFile (client-go's spelling, which client-node does not read), trimmed as client-go does", async () => {
    const dir = folder({
      "cfg/config": kubeconfig({}, { tokenFile: "secrets/token" }),
      "cfg/secrets/token": "tok\n",
    });
    const ours = await described(lean({ path: path.join(dir, "cfg/config") }));
    expect(ours.headers).toEqual({ Authorization: "Bearer tok" });
  });

  test("several KUBECONFIG files: context, cluster and user each from another file, current-context from the first that sets it", async () => {
    const dir = folder({
      a: JSON.stringify({ "current-context": "ctx-b", users: [{ name: "u", user: { token: "ta" } }] }),
      b: JSON.stringify({
        "current-context": "ctx-c",
        contexts: [{ name: "ctx-b", context: { cluster: "c", user: "u", namespace: "from-b" } }],
      }),
      "sub/c": JSON.stringify({
        clusters: [{ name: "c", cluster: { server: "https://b:6443", "certificate-authority": "ca.crt" } }],
        contexts: [{ name: "ctx-c", context: { cluster: "c" } }],
      }),
      "sub/ca.crt": CA,
    });
    const KUBECONFIG = ["a", "b", "sub/c"].map((f) => path.join(dir, f)).join(path.delimiter);
    const ours = await described(lean({ env: { KUBECONFIG } }));
    expect(ours).toEqual(await described(kubeConnectionOf(clientNode({ KUBECONFIG }))));
    expect(ours).toMatchObject({
      server: "https://b:6443",
      context: "ctx-b",
      namespace: "from-b",
      ca: CA,
      headers: { Authorization: "Bearer ta" },
    });
  });

  test("several KUBECONFIG files naming the same cluster: the first file's wins (client-go; client-node throws), a listed file that does not exist is skipped, current-context from the first that sets it", async () => {
    const dir = folder({
      zero: JSON.stringify({ users: [{ name: "other", user: { token: "zero" } }] }),
      first: kubeconfig({ server: "https://first:6443" }, { token: "one" }),
      second: kubeconfig({ server: "https://second:6443" }, { token: "two" }),
    });
    const KUBECONFIG = ["zero", "missing", "first", "second"]
      .map((f) => path.join(dir, f))
      .join(path.delimiter);
    const ours = await described(lean({ env: { KUBECONFIG } }));
    expect(ours).toMatchObject({
      server: "https://first:6443",
      context: "ctx",
      headers: { Authorization: "Bearer one" },
    });
    expect(() => clientNode({ KUBECONFIG })).toThrow(); // why client-node's merge is not ours
  });

  test("in-cluster: the service host and port, the service account's CA, token and namespace", async () => {
    const root = folder({
      "var/run/secrets/kubernetes.io/serviceaccount/ca.crt": CA,
      "var/run/secrets/kubernetes.io/serviceaccount/token": "sa-token",
      "var/run/secrets/kubernetes.io/serviceaccount/namespace": "shapes-system",
    });
    const env = { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" };
    const ours = await described(
      lean({ env, serviceAccountDir: path.join(root, "var/run/secrets/kubernetes.io/serviceaccount") }),
    );
    const kc = new KubeConfig();
    withEnv(env, () => kc.loadFromCluster(root));
    expect(ours).toEqual(await described(kubeConnectionOf(kc)));
    expect(ours).toMatchObject({
      server: "https://10.96.0.1:443",
      namespace: "shapes-system",
      ca: CA,
      headers: { Authorization: "Bearer sa-token" },
    });
  });

  test("in-cluster on IPv6: the host in brackets", () => {
    const sa = folder({ ca: CA, token: "t" });
    writeFileSync(path.join(sa, "ca.crt"), CA);
    const connection = lean({
      env: { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" },
      serviceAccountDir: sa,
    });
    expect(connection.server).toBe("https://[fd00::1]:443");
    expect(connection.namespace).toBeUndefined();
  });
});

describe("loadKubeconfig: where it looks, first that applies", () => {
  const files = folder({
    explicit: kubeconfig({ server: "https://explicit:1" }, { token: "t" }),
    env: kubeconfig({ server: "https://env:1" }, { token: "t" }),
    "home/.kube/config": kubeconfig({ server: "https://home:1" }, { token: "t" }),
    "sa/ca.crt": CA,
    "sa/token": "t",
  });
  const at = (f: string) => path.join(files, f);
  const inPod = { KUBERNETES_SERVICE_HOST: "in-cluster", KUBERNETES_SERVICE_PORT: "443" };
  test.each([
    {
      reason: "an explicit path beats KUBECONFIG",
      options: { path: at("explicit"), env: { KUBECONFIG: at("env"), ...inPod, HOME: at("home") } },
      server: "https://explicit:1",
      source: `--kubeconfig ${at("explicit")}`,
    },
    {
      reason: "KUBECONFIG beats in-cluster",
      options: { env: { KUBECONFIG: at("env"), ...inPod, HOME: at("home") } },
      server: "https://env:1",
      source: `KUBECONFIG ${at("env")}`,
    },
    {
      reason: "in-cluster beats ~/.kube/config (client-node's loadFromDefault has it the other way round)",
      options: { env: { ...inPod, HOME: at("home") } },
      server: "https://in-cluster:443",
      source: "in-cluster",
    },
    {
      reason: "in-cluster needs the token file: without it, ~/.kube/config",
      options: { env: { ...inPod, HOME: at("home") }, serviceAccountDir: at("nothing-here") },
      server: "https://home:1",
      source: at("home/.kube/config"),
    },
    {
      reason: "in-cluster needs both variables: without the port, ~/.kube/config",
      options: { env: { KUBERNETES_SERVICE_HOST: "in-cluster", HOME: at("home") } },
      server: "https://home:1",
      source: at("home/.kube/config"),
    },
  ])("$reason", ({ options, server, source }) => {
    const connection = lean({ serviceAccountDir: at("sa"), ...options });
    expect({ server: connection.server, source: connection.source }).toEqual({ server, source });
  });
});

describe("loadKubeconfig: a kubeconfig it cannot use is one line naming the file and the field", () => {
  const good = { "certificate-authority-data": b64(CA) };
  test.each([
    { reason: "a missing file", files: {}, message: "kubeconfig {dir}/config: cannot read it: no such file" },
    {
      reason: "not YAML",
      files: { config: "clusters: [\n  - name: c\n  cluster: {" },
      message: /^kubeconfig \{dir\}\/config: is not YAML: .+[^:]$/,
    },
    {
      reason: "YAML, but not a map",
      files: { config: "- a\n- b\n" },
      message: "kubeconfig {dir}/config: is not a YAML map (a kubeconfig is one)",
    },
    {
      reason: "no current context",
      files: { config: JSON.stringify({ clusters: [] }) },
      message: "kubeconfig {dir}/config: current-context is not set",
    },
    {
      reason: "a current context that names no context",
      files: { config: JSON.stringify({ "current-context": "nope", contexts: [] }) },
      message: 'kubeconfig {dir}/config: current-context "nope" names no entry of contexts',
    },
    {
      reason: "a context naming a missing cluster",
      files: {
        config: JSON.stringify({
          "current-context": "x",
          contexts: [{ name: "x", context: { cluster: "gone" } }],
        }),
      },
      message: 'kubeconfig {dir}/config: contexts "x": context.cluster "gone" names no entry of clusters',
    },
    {
      reason: "a context naming a missing user",
      files: { config: kubeconfig(good, undefined, { user: "ghost" }) },
      message: 'kubeconfig {dir}/config: contexts "ctx": context.user "ghost" names no entry of users',
    },
    {
      reason: "a missing certificate file",
      files: { config: kubeconfig(good, { "client-certificate": "nope.crt", "client-key-data": b64(KEY) }) },
      message:
        'kubeconfig {dir}/config: users "u": user.client-certificate: cannot read {dir}/nope.crt: no such file',
    },
    {
      reason: "a missing CA file",
      files: { config: kubeconfig({ "certificate-authority": "/nowhere/ca.crt" }, { token: "t" }) },
      message:
        'kubeconfig {dir}/config: clusters "c": cluster.certificate-authority: cannot read /nowhere/ca.crt: no such file',
    },
    {
      reason: "a missing token file",
      files: { config: kubeconfig(good, { tokenFile: "token" }) },
      message: 'kubeconfig {dir}/config: users "u": user.tokenFile: cannot read {dir}/token: no such file',
    },
    {
      reason: "a server that is not a URL",
      files: { config: kubeconfig({ server: "10.0.0.1:6443 " }, { token: "t" }) },
      message: 'kubeconfig {dir}/config: clusters "c": cluster.server "10.0.0.1:6443 " is not a URL',
    },
    {
      reason: "a server that is not http(s)",
      files: { config: kubeconfig({ server: "ftp://10.0.0.1" }, { token: "t" }) },
      message: 'kubeconfig {dir}/config: clusters "c": cluster.server "ftp://10.0.0.1" is not an http(s) URL',
    },
    {
      reason: "a certificate without its key",
      files: { config: kubeconfig(good, { "client-certificate-data": b64(CERT) }) },
      message: 'kubeconfig {dir}/config: users "u": user.client-certificate is set without client-key',
    },
    {
      reason: "a file and its -data twin both set",
      files: {
        config: kubeconfig({ "certificate-authority": "ca", "certificate-authority-data": b64(CA) }, {}),
      },
      message:
        'kubeconfig {dir}/config: clusters "c": cluster.certificate-authority and certificate-authority-data are both set: keep one',
    },
    {
      reason: "a proxy",
      files: { config: kubeconfig({ "proxy-url": "http://proxy:3128" }, { token: "t" }) },
      message:
        'kubeconfig {dir}/config: clusters "c": cluster.proxy-url is set: a proxy is not supported (requests go directly)',
    },
    {
      reason: "insecure-skip-tls-verify that is not a boolean",
      files: { config: kubeconfig({ "insecure-skip-tls-verify": "yes" }, { token: "t" }) },
      message: 'kubeconfig {dir}/config: clusters "c": cluster.insecure-skip-tls-verify is not true or false',
    },
  ])("$reason", async ({ files, message }) => {
    const dir = folder(files);
    const verdict = loadKubeconfig({ path: path.join(dir, "config") });
    if (verdict.kind !== "invalid") throw new Error(`expected invalid, got ${verdict.kind}`);
    expect(verdict.error).toBeInstanceOf(KubeconfigError);
    const expected =
      typeof message === "string"
        ? message.replaceAll("{dir}", dir)
        : new RegExp(message.source.replaceAll("\\{dir\\}", dir.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
    if (typeof expected === "string") expect(verdict.error.message).toBe(expected);
    else expect(verdict.error.message).toMatch(expected);
    expect(verdict.error.message).not.toContain("\n");
    await expect(connectKubeconfig({ path: path.join(dir, "config") })).rejects.toThrow(
      verdict.error.message,
    );
  });

  test("KUBECONFIG whose files all do not exist, and nothing at all: say where it looked", () => {
    const dir = folder({});
    const list = loadKubeconfig({ env: { KUBECONFIG: `${dir}/a${path.delimiter}${dir}/b` } });
    expect(list.kind === "invalid" && list.error.message).toBe(
      `kubeconfig KUBECONFIG ${dir}/a${path.delimiter}${dir}/b: none of its files exists`,
    );
    const none = loadKubeconfig({ env: { HOME: dir }, serviceAccountDir: `${dir}/sa` });
    expect(none.kind === "invalid" && none.error.message).toBe(
      `kubeconfig not found: no --kubeconfig, KUBECONFIG not set, not in a cluster (KUBERNETES_SERVICE_HOST/PORT and ${dir}/sa/token), no ${dir}/.kube/config`,
    );
  });
});

describe("the token file is read again once its time-to-live passed (it rotates)", () => {
  test("the old token until the TTL passes, then the new one; a file gone for a moment keeps the last", async () => {
    const dir = folder({ config: kubeconfig({}, { tokenFile: "token" }), token: "first" });
    let now = 1_000;
    const connection = lean({ path: path.join(dir, "config"), tokenFileTtlMs: 60_000, now: () => now });
    const bearer = async () => (await connection.credentials()).headers.Authorization;
    expect(await bearer()).toBe("Bearer first");
    writeFileSync(path.join(dir, "token"), "second\n");
    now += 59_999;
    expect(await bearer()).toBe("Bearer first");
    now += 1;
    expect(await bearer()).toBe("Bearer second");
    unlinkSync(path.join(dir, "token"));
    now += 60_000;
    expect(await bearer()).toBe("Bearer second");
  });
});

describe("kubeconfigs that need client-node: a verdict, then client-node's loader, with one log line", () => {
  test("an exec credential plugin (relative command): needs client-node, which runs it", async () => {
    const dir = folder({
      "bin/plugin.sh":
        '#!/bin/sh\necho \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}\'\n',
      config: kubeconfig(
        { "certificate-authority-data": b64(CA) },
        {
          exec: {
            apiVersion: "client.authentication.k8s.io/v1",
            command: "./bin/plugin.sh",
            interactiveMode: "Never",
          },
        },
        { namespace: "ns" },
      ),
    });
    chmodSync(path.join(dir, "bin/plugin.sh"), 0o755);
    const verdict = loadKubeconfig({ path: path.join(dir, "config") });
    expect(verdict).toMatchObject({
      kind: "needs-client-node",
      why: "an exec credential plugin (plugin.sh)",
      contextName: "ctx",
      userName: "u",
    });
    if (verdict.kind !== "needs-client-node") return;
    const lines: string[] = [];
    const log = { info: (_fields: object, line: string) => void lines.push(line) };
    const connection = await connectWithClientNode(verdict, log as never);
    expect(await described(connection)).toMatchObject({
      server: "https://10.0.0.1:6443",
      namespace: "ns",
      ca: CA,
      headers: { Authorization: "Bearer from-exec" },
    });
    expect(lines).toEqual([
      `kubeconfig: user "u" uses an exec credential plugin (plugin.sh), which only @kubernetes/client-node's loader runs: loading it`,
    ]);
  });

  test("an auth provider: needs client-node", () => {
    const dir = folder({
      config: kubeconfig({}, { "auth-provider": { name: "oidc", config: { "id-token": "x" } } }),
    });
    expect(loadKubeconfig({ path: path.join(dir, "config") })).toMatchObject({
      kind: "needs-client-node",
      why: "an auth provider (oidc)",
    });
  });
});

/**
 * Runs a fresh node that records every module it resolves while it imports `module` (and loads a
 * kubeconfig, JSON unless `yamlFile`); returns the URLs.
 */
function resolvedUrls(module: string, { yamlFile = false } = {}): string[] {
  const json = kubeconfig({}, { token: "t" });
  const dir = folder({ config: yamlFile ? stringify(JSON.parse(json)) : json });
  const script = `
    import { registerHooks } from "node:module";
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r; } });
    const m = await import(${JSON.stringify(path.join(HERE, module))});
    if (m.loadKubeconfig && m.loadKubeconfig({ path: ${JSON.stringify(path.join(dir, "config"))} }).kind !== "lean") process.exit(3);
    console.log(JSON.stringify(seen));
  `;
  const run = spawnSync(
    process.execPath,
    ["--conditions=shapes-source", "--input-type=module", "-e", script],
    {
      encoding: "utf8",
      cwd: HERE,
    },
  );
  if (run.status !== 0) throw new Error(`node exited ${run.status}: ${run.stderr}`);
  return JSON.parse(run.stdout.trim()) as string[];
}

describe("loading the lean loader imports nothing of @kubernetes/client-node", () => {
  const clientNodeLoaded = (module: string) =>
    resolvedUrls(module).some((url) => url.includes("@kubernetes/client-node"));

  test.each([
    { reason: "the loader", module: "kubeconfig.ts", loaded: false },
    { reason: "the keep-alive client on it", module: "kube-http.ts", loaded: false },
    { reason: "the lean list-watch on that client", module: "../source/kube-list-watch.ts", loaded: false },
    {
      reason: "the informer",
      module: "../source/informer.ts",
      loaded: false,
    },
    {
      reason:
        "the library's whole main entry point (client-node only lazily, for an exec plugin or an auth provider)",
      module: "../index.ts",
      loaded: false,
    },
    {
      reason: "(the probe sees it: pooled-kube-config.ts imports client-node)",
      module: "pooled-kube-config.ts",
      loaded: true,
    },
    {
      reason: "(the probe sees it: the reconcile-kit/client-node entry point is pooled-kube-config.ts)",
      module: "../client-node.ts",
      loaded: true,
    },
  ])("$reason", ({ module, loaded }) => {
    expect(clientNodeLoaded(module)).toBe(loaded);
  });
});

describe("the yaml package is loaded only to read a YAML kubeconfig file", () => {
  const yamlLoaded = (yamlFile: boolean) =>
    resolvedUrls("kubeconfig.ts", { yamlFile }).some((url) => url.includes("/node_modules/yaml/"));

  test.each([
    { reason: "a JSON kubeconfig is JSON.parse'd: no yaml", yamlFile: false, loaded: false },
    { reason: "(the probe sees it: a YAML kubeconfig loads yaml)", yamlFile: true, loaded: true },
  ])("$reason", ({ yamlFile, loaded }) => {
    expect(yamlLoaded(yamlFile)).toBe(loaded);
  });
});
