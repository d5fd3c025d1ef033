/**
 * The library as another project gets it: `npm pack` of library/ and of envtest/ (each one's prepack builds
 * its dist/), and for each example (DNS, etcd) a new project in a temporary folder OUTSIDE the checkout that
 * installs both tarballs (envtest as a devDependency, as a plugin author's tests use it) and, from the npm
 * registry, what the example needs besides (vitest, for the conformance kit's types); the example's sources
 * copied there and compiled by that project's own TypeScript against the packages' declarations, its
 * conformance subject (`conformance/`) type-checked the same way, and then run —
 * `node dist/main.js`, built JavaScript, reconcile-kit loaded from the project's node_modules — against a
 * real API server and the example's API (the zone API; a separate etcd).
 *
 * What it proves: the packages are complete (their exports, their dist, their dependencies; envtest's Go
 * wrapper modules), the examples and their subjects need nothing of this repo but the packages' public
 * entries (no import leaves their folder), a local control plane starts from the installed envtest with the
 * cached binaries and installs the project's CRDs, and a controller built on the installed package
 * reconciles: a Record applied is created in the zone, Ready; deleted, it is gone from the zone and the
 * finalizer lets the Record go; the same for a ConfigEntry and its etcd key.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installCRDs, KUBERNETES_VERSION, type LocalControlPlane, readCRDs } from "@shapes/envtest";
import { type DnsRecord, fqdnOf, GROUP, RECORDS, VERSION, ZoneApi, ZoneClient } from "@shapes/dns-controller";
import * as etcdExample from "@shapes/etcd-controller";
import { ControllerProcess, REPO_ROOT, waitFor } from "@shapes/stack";
import { applyManifestFile } from "reconcile-kit/harness";
import { startLocalControlPlane } from "./support/envtest.ts";
import { preparedBinaries } from "./support/stack.ts";

const run = promisify(execFile);
const LIBRARY = join(REPO_ROOT, "library");
const ENVTEST = join(REPO_ROOT, "envtest");
const EXAMPLE = join(REPO_ROOT, "examples", "dns-controller");
const ETCD_EXAMPLE = join(REPO_ROOT, "examples", "etcd-controller");
const ARTIFACTS = join(REPO_ROOT, "e2e", "artifacts", "library-installed");
const NAMESPACE = "default";

/** The environment of everything run in the consumer project: no `--conditions=shapes-source` (this repo's). */
function consumerEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  return env;
}

/** An installed example, run as the stack runs a controller: its own process, logs, /readyz. */
class InstalledController extends ControllerProcess {
  project = "";
  /** The example's flag for its API's URL. */
  urlFlag = "zone-url";
  override args(): string[] {
    return [
      join(this.project, "dist", "main.js"),
      `--${this.urlFlag}=${this.options.cloudUrl}`,
      `--kubeconfig=${this.options.kubeconfigPath}`,
      "--metrics-address=127.0.0.1:0",
      "--leak-grace=2s",
    ];
  }
}

/** The versions this repo uses of what the example imports besides the library. */
async function versionsOf(names: readonly string[]): Promise<Record<string, string>> {
  const root = JSON.parse(await readFile(join(REPO_ROOT, "package.json"), "utf8")) as {
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  const all = { ...root.dependencies, ...root.devDependencies };
  return Object.fromEntries(
    names.map((name) => {
      const version = all[name];
      if (!version) throw new Error(`the repo's package.json names no version of ${name}`);
      return [name, version];
    }),
  );
}

/** `npm pack` of the workspace in `dir` into `destination`, as `npm publish` would send it: the tarball's path. */
async function pack(dir: string, destination: string): Promise<string> {
  const packed = await run("npm", ["pack", "--pack-destination", destination, "--json"], {
    cwd: dir,
    env: consumerEnv(),
    maxBuffer: 16 * 1024 * 1024,
  });
  const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as { filename: string }[];
  if (!info) throw new Error(`npm pack said nothing usable: ${packed.stdout}`);
  return join(destination, info.filename);
}

/** The TypeScript files of an example's `conformance/` folder (its subject); none when it has no such folder. */
async function conformanceFiles(example: string): Promise<string[]> {
  const dir = join(example, "conformance");
  if (!existsSync(dir)) return [];
  return (await readdir(dir)).filter((f) => f.endsWith(".ts")).toSorted();
}

/**
 * A project of its own in a temporary folder outside the checkout, for the example in `example`: its sources
 * (not its tests), its conformance subject (`conformance/*.ts`, when it has one), CRDs and RBAC, nothing
 * else; the packed tarballs (envtest as a devDependency) and, from the npm registry, `packages` at the
 * versions this repo uses, installed; then built by the project's own TypeScript into dist/. The project is
 * the plugin's own package (the example's name, its entry exported), so a subject may import it by name.
 */
async function consumerProject(
  example: string,
  tarballs: { library: string; envtest: string },
  packages: { dependencies: string[]; devDependencies: string[] },
): Promise<string> {
  const { name } = JSON.parse(await readFile(join(example, "package.json"), "utf8")) as { name: string };
  const project = await mkdtemp(join(tmpdir(), `${name.replace(/^@[^/]+\//, "")}-consumer-`));
  expect(relative(REPO_ROOT, project).startsWith(".."), "the project is outside the checkout").toBe(true);
  await mkdir(join(project, "src"));
  for (const file of await readdir(join(example, "src"))) {
    if (file.endsWith(".ts") && !file.endsWith(".test.ts"))
      await cp(join(example, "src", file), join(project, "src", file));
  }
  const subject = await conformanceFiles(example);
  if (subject.length > 0) await mkdir(join(project, "conformance"));
  for (const file of subject)
    await cp(join(example, "conformance", file), join(project, "conformance", file));
  await cp(join(example, "crds"), join(project, "crds"), { recursive: true });
  await cp(join(example, "rbac.yaml"), join(project, "rbac.yaml"));
  await writeFile(
    join(project, "package.json"),
    JSON.stringify(
      {
        name,
        private: true,
        type: "module",
        exports: { ".": { types: "./src/index.ts", default: "./dist/index.js" } },
        dependencies: {
          "reconcile-kit": `file:${tarballs.library}`,
          ...(await versionsOf(packages.dependencies)),
        },
        devDependencies: {
          "@shapes/envtest": `file:${tarballs.envtest}`,
          ...(await versionsOf(["vitest", ...packages.devDependencies])),
        },
      },
      null,
      2,
    ),
  );
  await writeFile(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "es2024",
        lib: ["es2024"],
        module: "nodenext",
        moduleResolution: "nodenext",
        types: ["node"],
        rootDir: "src",
        outDir: "dist",
        allowImportingTsExtensions: true,
        rewriteRelativeImportExtensions: true,
        verbatimModuleSyntax: true,
        strict: true,
        skipLibCheck: true,
      },
      include: ["src"],
    }),
  );
  // The subject is type-checked, not built: the project's tests run it (the conformance kit runs under Vitest).
  await writeFile(
    join(project, "tsconfig.conformance.json"),
    JSON.stringify({
      extends: "./tsconfig.json",
      compilerOptions: { noEmit: true, rootDir: "." },
      include: ["src", "conformance"],
    }),
  );
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], {
    cwd: project,
    env: consumerEnv(),
    maxBuffer: 16 * 1024 * 1024,
  });
  // Built by the project's own compiler, against the installed package's declarations.
  await run(join(project, "node_modules", ".bin", "tsc"), ["-p", "."], { cwd: project, env: consumerEnv() });
  return project;
}

describe("the library installed from its packed tarball, outside the repo", () => {
  let packDir = "";
  let project = "";
  let etcdProject = "";
  let tarball = "";
  let envtestTarball = "";
  let cluster: LocalControlPlane | undefined;
  let kubeConfig: KubeConfig;
  let zone: ZoneApi | undefined;
  let controller: InstalledController | undefined;
  let etcd: etcdExample.EtcdServer | undefined;
  let etcdController: InstalledController | undefined;

  beforeAll(async () => {
    packDir = await mkdtemp(join(tmpdir(), "reconcile-kit-pack-"));

    // 1. The packages, as `npm publish` would send them.
    tarball = await pack(LIBRARY, packDir);
    envtestTarball = await pack(ENVTEST, packDir);
    const tarballs = { library: tarball, envtest: envtestTarball };

    // 2. and 3. A project of its own for each example, built by its own compiler.
    project = await consumerProject(EXAMPLE, tarballs, {
      dependencies: ["@kubernetes/client-node", "@opentelemetry/api", "express", "zod"],
      devDependencies: ["typescript", "@types/node", "@types/express"],
    });
    etcdProject = await consumerProject(ETCD_EXAMPLE, tarballs, {
      dependencies: ["@kubernetes/client-node"],
      devDependencies: ["typescript", "@types/node"],
    });

    // 4. A real API server, the example's CRDs and least-privilege RBAC, the zone, the controller.
    await mkdir(ARTIFACTS, { recursive: true });
    cluster = await startLocalControlPlane();
    kubeConfig = cluster.kubeConfig();
    await installCRDs(kubeConfig, { dir: join(project, "crds") });
    await applyManifestFile(kubeConfig, join(project, "rbac.yaml"));
    const identity = await cluster.serviceAccountIdentity("dns-system", "dns-controller");
    zone = new ZoneApi();
    await zone.start();
    controller = new InstalledController({
      name: "dns-controller-installed",
      artifactsDir: ARTIFACTS,
      kubeconfigPath: identity.kubeconfigPath,
      cloudUrl: zone.url,
      cloudToken: "",
      nodeFlags: [],
      env: { NODE_OPTIONS: "" },
    });
    controller.project = project;
    await controller.start();

    await installCRDs(kubeConfig, { dir: join(etcdProject, "crds") });
    await applyManifestFile(kubeConfig, join(etcdProject, "rbac.yaml"));
    const etcdIdentity = await cluster.serviceAccountIdentity("etcd-config-system", "etcd-controller");
    const binary = preparedBinaries().binaries?.etcd;
    if (!binary) throw new Error("the global setup prepared no etcd binary");
    etcd = await etcdExample.EtcdServer.start({ binary });
    etcdController = new InstalledController({
      name: "etcd-controller-installed",
      artifactsDir: ARTIFACTS,
      kubeconfigPath: etcdIdentity.kubeconfigPath,
      cloudUrl: etcd.url,
      cloudToken: "",
      nodeFlags: [],
      env: { NODE_OPTIONS: "" },
    });
    etcdController.project = etcdProject;
    etcdController.urlFlag = "etcd-url";
    await etcdController.start();
  }, 900_000);

  afterAll(async () => {
    await controller?.stop(5_000).catch(() => {});
    await etcdController?.stop(5_000).catch(() => {});
    await zone?.stop().catch(() => {});
    await etcd?.stop().catch(() => {});
    await cluster?.stop().catch(() => {});
    for (const dir of [project, etcdProject, packDir])
      if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("packs the built JavaScript and declarations of every public entry, and no sources or tests", async () => {
    const manifest = JSON.parse(
      await readFile(join(project, "node_modules", "reconcile-kit", "package.json"), "utf8"),
    ) as {
      exports: Record<string, unknown>;
    };
    expect(Object.keys(manifest.exports)).toEqual(
      expect.arrayContaining([".", "./tracing", "./testing", "./conformance"]),
    );
    const files = await readdir(join(project, "node_modules", "reconcile-kit"), { recursive: true });
    for (const entry of [
      "dist/index.js",
      "dist/index.d.ts",
      "dist/testing/index.js",
      "dist/observability/tracing.js",
      "dist/observability/tracing-sdk.js",
      "dist/conformance/index.js",
      "dist/conformance/index.d.ts",
    ])
      expect(files, entry).toContain(entry);
    expect(files.filter((f) => f.startsWith("src") || /\.test\.(js|ts|d\.ts)$/.test(f))).toEqual([]);
  });

  it("packs envtest's built JavaScript and declarations and its Go wrapper modules, and no sources or tests", async () => {
    for (const dir of [project, etcdProject]) {
      const installed = join(dir, "node_modules", "@shapes", "envtest");
      const manifest = JSON.parse(await readFile(join(installed, "package.json"), "utf8")) as {
        private?: boolean;
        exports: Record<string, unknown>;
      };
      expect(manifest.private).toBeUndefined();
      expect(Object.keys(manifest.exports)).toContain(".");
      const files = await readdir(installed, { recursive: true });
      for (const entry of [
        "dist/index.js",
        "dist/index.d.ts",
        "dist/control-plane.js",
        "dist/build.js",
        "go/kubernetes/go.mod",
        "go/kubernetes/go.sum",
        "go/etcd/go.mod",
        "go/etcd/go.sum",
        "README.md",
      ])
        expect(files, entry).toContain(entry);
      expect(files.filter((f) => f.startsWith("src") || /\.test\.(js|ts|d\.ts)$/.test(f))).toEqual([]);
    }
  });

  it("the examples and their subjects import nothing outside their own folders but packages", async () => {
    // A subject (conformance/) may import the example's sources (../src/...) besides its own folder.
    const allowed = { src: /^\.\/[^/]+$/, conformance: /^(\.\/[^/]+|\.\.\/src\/[^/]+)$/ };
    for (const dir of [project, etcdProject]) {
      for (const folder of ["src", "conformance"] as const) {
        if (!existsSync(join(dir, folder))) continue;
        for (const file of await readdir(join(dir, folder))) {
          const text = await readFile(join(dir, folder, file), "utf8");
          for (const [, from, dynamic] of text.matchAll(/\bfrom\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)/g)) {
            const specifier = from ?? dynamic;
            if (specifier?.startsWith("."))
              expect(specifier, `${folder}/${file}: ${specifier}`).toMatch(allowed[folder]);
          }
        }
      }
    }
  });

  describe.each([
    { example: "dns-controller", dir: EXAMPLE, project: () => project },
    { example: "etcd-controller", dir: ETCD_EXAMPLE, project: () => etcdProject },
  ])("$example's conformance subject", ({ dir, project: projectOf }) => {
    it("compiles with the project's own TypeScript against the installed packages' declarations", async () => {
      const files = await conformanceFiles(dir);
      expect(files, "the example has a conformance subject").toContain("subject.ts");
      expect(await readdir(join(projectOf(), "conformance"))).toEqual(files);
      await run(join(projectOf(), "node_modules", ".bin", "tsc"), ["-p", "tsconfig.conformance.json"], {
        cwd: projectOf(),
        env: consumerEnv(),
      });
    });
  });

  it("starts a local control plane from the installed envtest with the cached binaries, and installs the project's CRDs", async () => {
    // What a plugin author's test setup does, in a script of the project: nothing here is this repo's.
    await writeFile(
      join(project, "control-plane.mjs"),
      [
        'import { httpsGet, installCRDs, silentLog, startLocal } from "@shapes/envtest";',
        "const cp = await startLocal({ log: silentLog });",
        "try {",
        "  const kc = cp.kubeConfig();",
        '  const pem = (b64) => Buffer.from(b64 ?? "", "base64").toString("utf8");',
        "  const tls = {",
        "    caPem: pem(kc.getCurrentCluster()?.caData),",
        "    certPem: pem(kc.getCurrentUser()?.certData),",
        "    keyPem: pem(kc.getCurrentUser()?.keyData),",
        "  };",
        "  const readyz = await httpsGet(`${cp.server}/readyz`, tls);",
        "  const version = JSON.parse((await httpsGet(`${cp.server}/version`, tls)).body).gitVersion;",
        "  const crds = await installCRDs(cp.kubeconfigPath); // the project's crds/, the default",
        "  console.log(JSON.stringify({ dir: cp.dir, readyz, version, crds }));",
        "} finally {",
        "  await cp.stop();",
        "}",
      ].join("\n"),
    );
    const binaries = preparedBinaries().binaries;
    if (!binaries) throw new Error("the global setup prepared no binaries");
    // The binaries the global setup found (the cache, or KUBEBUILDER_ASSETS): a test never builds them.
    const env: NodeJS.ProcessEnv = { ...consumerEnv(), KUBEBUILDER_ASSETS: binaries.dir };
    delete env.KUBECONFIG;
    delete env.USE_EXISTING_CLUSTER;
    const { stdout } = await run(process.execPath, ["control-plane.mjs"], { cwd: project, env });
    const result = JSON.parse(stdout.trim().split("\n").at(-1) ?? "") as {
      dir: string;
      readyz: { status: number; body: string };
      version: string;
      crds: string[];
    };
    expect(result.readyz).toEqual({ status: 200, body: "ok" });
    expect(result.version).toBe(KUBERNETES_VERSION);
    expect(result.crds.toSorted()).toEqual(
      (await readCRDs(join(project, "crds"))).map((c) => c.metadata.name).toSorted(),
    );
    expect(existsSync(result.dir), "stop() deleted the control plane's folder").toBe(false);
  });

  it("runs the installed packages' built JavaScript, not this repo's sources", async () => {
    const { stdout } = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        'for (const p of ["reconcile-kit", "@shapes/envtest"]) console.log(import.meta.resolve(p))',
      ],
      { cwd: project, env: consumerEnv() },
    );
    const resolved = await Promise.all(
      stdout
        .trim()
        .split("\n")
        .map((url) => realpath(new URL(url).pathname)),
    );
    expect(resolved).toEqual([
      await realpath(join(project, "node_modules", "reconcile-kit", "dist", "index.js")),
      await realpath(join(project, "node_modules", "@shapes", "envtest", "dist", "index.js")),
    ]);
  });

  it("reconciles a Record into the zone, and deletes it with the Record", async () => {
    const api = kubeConfig.makeApiClient(CustomObjectsApi);
    const client = new ZoneClient({ baseUrl: zone?.url ?? "", clientId: "library-installed-test" });
    const name = "installed";
    await api.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NAMESPACE,
      plural: RECORDS,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "Record",
        metadata: { name },
        spec: { type: "A", value: "192.0.2.10" },
      },
    });
    const fqdn = fqdnOf(NAMESPACE, name);
    const created = await waitFor("the record in the zone", async () => {
      const record = await client.getByName(fqdn);
      if (record?.value !== "192.0.2.10") throw new Error(`zone has ${JSON.stringify(record)}`);
      return record;
    });
    await waitFor("the Record Ready and Synced", async () => {
      const record = (await api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: NAMESPACE,
        plural: RECORDS,
        name,
      })) as DnsRecord;
      const status = (type: string) => record.status?.conditions?.find((c) => c.type === type)?.status;
      if (status("Ready") !== "True" || status("Synced") !== "True")
        throw new Error(`conditions: ${JSON.stringify(record.status?.conditions)}`);
      expect(record.status?.recordId).toBe(created.id);
    });

    await api.deleteNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NAMESPACE,
      plural: RECORDS,
      name,
    });
    await waitFor("the record gone from the zone", async () => {
      const record = await client.getByName(fqdn);
      if (record) throw new Error(`zone still has ${JSON.stringify(record)}`);
    });
    await waitFor("the Record gone from Kubernetes (the finalizer let it go)", async () => {
      const { items } = (await api.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: NAMESPACE,
        plural: RECORDS,
      })) as { items: DnsRecord[] };
      if (items.some((r) => r.metadata.name === name)) throw new Error("the Record is still there");
    });
  });

  it("reconciles a ConfigEntry into its etcd key, and deletes the key with the ConfigEntry", async () => {
    const { CONFIG_ENTRIES, EtcdClient, GROUP: ETCD_GROUP, KEY_PREFIX, VERSION: ETCD_VERSION } = etcdExample;
    const api = kubeConfig.makeApiClient(CustomObjectsApi);
    const client = new EtcdClient({ baseUrl: etcd?.url ?? "" });
    const name = "installed";
    const at = { group: ETCD_GROUP, version: ETCD_VERSION, namespace: NAMESPACE, plural: CONFIG_ENTRIES };
    await api.createNamespacedCustomObject({
      ...at,
      body: {
        apiVersion: `${ETCD_GROUP}/${ETCD_VERSION}`,
        kind: "ConfigEntry",
        metadata: { name },
        spec: { value: "installed value" },
      },
    });
    const key = `${KEY_PREFIX}${NAMESPACE}/${name}`;
    const created = await waitFor("the key in etcd", async () => {
      const entry = await client.get(key);
      if (entry?.fields.value !== "installed value") throw new Error(`etcd has ${JSON.stringify(entry)}`);
      return entry;
    });
    await waitFor("the ConfigEntry Ready and Synced", async () => {
      const entry = (await api.getNamespacedCustomObject({ ...at, name })) as etcdExample.ConfigEntry;
      const status = (type: string) => entry.status?.conditions?.find((c) => c.type === type)?.status;
      if (status("Ready") !== "True" || status("Synced") !== "True")
        throw new Error(`conditions: ${JSON.stringify(entry.status?.conditions)}`);
      expect(entry.status?.createRevision).toBe(created.id);
    });

    await api.deleteNamespacedCustomObject({ ...at, name });
    await waitFor("the key gone from etcd", async () => {
      const entry = await client.get(key);
      if (entry) throw new Error(`etcd still has ${JSON.stringify(entry)}`);
    });
    await waitFor("the ConfigEntry gone from Kubernetes (the finalizer let it go)", async () => {
      const { items } = (await api.listNamespacedCustomObject(at)) as { items: etcdExample.ConfigEntry[] };
      if (items.some((e) => e.metadata.name === name)) throw new Error("the ConfigEntry is still there");
    });
    client.close();
  });
});
