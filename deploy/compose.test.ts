/**
 * docker-compose.yml and the Dockerfiles, checked without Docker (this machine has no engine): read as
 * data and held against the code they run. Services and their order, pinned images in step with envtest
 * and scripts/node24.sh, non-root multi-stage builds, hardening, ports, healthchecks, the control plane's
 * flags against envtest's, the controller's and the cloud's configuration through their own parsers, and
 * every file an image's entry points import actually being in that image.
 */
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { parseArgs } from "node:util";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parse } from "yaml";
import { CONTROLLER_NODE_FLAGS, loadConfig, OPTIONS } from "@shapes/controller";
import {
  apiServerFlags,
  ETCD_VERSION,
  etcdFlags,
  flagName,
  flagValue,
  KUBERNETES_VERSION,
  MINIMUM_GO_VERSION,
  SERVICE_ACCOUNT_ISSUER,
} from "@shapes/envtest";
import { DEFAULT_CLOUD_PORT, DEFAULT_METRICS_PORT } from "../demo/options.ts";
import { CLOUD_TRACING_ENV, helpText, parseCommandLine } from "@shapes/mock-cloud";
import {
  baseImageOf,
  copiesOf,
  effectiveUser,
  importGraph,
  workspaceSources,
  interpolate,
  isCopied,
  isDockerIgnored,
  parseDockerfile,
  readDockerignore,
  stageChain,
  stageOf,
  type Stage,
} from "./build-context.ts";
import { CERTS_OPTIONS, ensureComposePki } from "./compose/certs.ts";
import { SETUP_OPTIONS } from "./compose/setup.ts";
import { node24Version } from "./images/stand-ins.ts";
import { TRACING_ENV } from "reconcile-kit/tracing";

const ROOT = join(import.meta.dirname, "..");

/** The parts of a compose service this test reads. */
interface Service {
  image?: string;
  build?: { context: string; dockerfile: string; target?: string; secrets?: string[] };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: string[];
  tmpfs?: string[];
  secrets?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[]; interval: string; timeout: string; retries: number };
  restart?: string;
  read_only?: boolean;
  cap_drop?: string[];
  security_opt?: string[];
  init?: boolean;
  networks?: string[];
  network_mode?: string;
}

interface Compose {
  services: Record<string, Service>;
  secrets: Record<string, { file: string }>;
  volumes: Record<string, unknown>;
  networks: Record<string, { internal?: boolean } | null>;
}

const compose = parse(interpolate(await readFile(join(ROOT, "docker-compose.yml"), "utf8")), {
  merge: true,
}) as Compose;
const services = compose.services;
const dockerfiles = new Map<string, Stage[]>();
for (const s of Object.values(services)) {
  if (s.build && !dockerfiles.has(s.build.dockerfile)) {
    dockerfiles.set(
      s.build.dockerfile,
      parseDockerfile(await readFile(join(ROOT, s.build.dockerfile), "utf8")),
    );
  }
}
const ignored = readDockerignore(join(ROOT, ".dockerignore"));
const packageJson = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  workspaces?: string[];
};

/** Whether `stage` COPYs `path` from the build context. */
function isCopiedInto(
  stages: ReturnType<typeof parseDockerfile>,
  stage: string | undefined,
  path: string,
): boolean {
  const found = stages.find((s) => s.name === stage);
  return found !== undefined && isCopied(copiesOf(stages, found), path);
}

/** The workspace packages that run from their sources: specifier → entry file. */
const sources = workspaceSources(ROOT);
/** The workspace packages of this repo: package name → folder. */
const workspaces = new Map(
  await Promise.all(
    (packageJson.workspaces ?? []).map(async (dir) => {
      const pkg = JSON.parse(await readFile(join(ROOT, dir, "package.json"), "utf8")) as { name: string };
      return [pkg.name, dir] as const;
    }),
  ),
);

const node24 = await node24Version();
const goMod = /^go (\d+\.\d+)/m.exec(
  await readFile(join(ROOT, "deploy", "compose", "probe", "go.mod"), "utf8"),
)?.[1];

/** The service, or a failure naming it. */
function service(name: string): Service {
  const s = services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
}

/** The stages of a service's Dockerfile and the stage it builds. */
function imageOf(name: string): { stages: Stage[]; stage: Stage } {
  const build = service(name).build;
  if (!build) throw new Error(`service ${name} builds no image`);
  const stages = dockerfiles.get(build.dockerfile) ?? [];
  return { stages, stage: stageOf(stages, build.target) };
}

/** The volume (or secret) mounted at the folder holding `path` in a service, and the path inside it. */
function volumeAt(name: string, path: string): { volume: string; inside: string } | undefined {
  for (const mount of service(name).volumes ?? []) {
    const [volume = "", target = ""] = mount.split(":");
    if (path.startsWith(`${target}/`)) return { volume, inside: path.slice(target.length + 1) };
  }
  return undefined;
}

/** `env` with every /run/secrets/<name> path replaced by the compose secret's file on this machine. */
function withSecretsOnDisk(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).map(([k, v]) => {
      const secret = /^\/run\/secrets\/(.+)$/.exec(v)?.[1];
      const file = secret === undefined ? undefined : compose.secrets[secret]?.file;
      return [k, file === undefined ? v : join(ROOT, file)];
    }),
  );
}

/** The port of a `host:port` or URL. */
function portOf(address: string): number {
  return Number(/:(\d+)(\/|$)/.exec(address)?.[1]);
}

describe("services and their order", () => {
  test("the demo's six services, and nothing else", () => {
    expect(Object.keys(services).toSorted()).toEqual(
      ["certs", "cloud", "controller", "etcd", "kube-apiserver", "setup"].toSorted(),
    );
  });

  test("depends_on has a topological order (no cycle, no unknown service)", () => {
    const order: string[] = [];
    const pending = new Set(Object.keys(services));
    while (pending.size > 0) {
      const ready = [...pending].filter((n) =>
        Object.keys(service(n).depends_on ?? {}).every((d) => order.includes(d)),
      );
      expect(ready, `a cycle or an unknown dependency among ${[...pending].join(", ")}`).not.toEqual([]);
      for (const n of ready) {
        order.push(n);
        pending.delete(n);
      }
    }
    expect(order.indexOf("certs")).toBeLessThan(order.indexOf("kube-apiserver"));
    expect(order.indexOf("setup")).toBeLessThan(order.indexOf("controller"));
  });

  const waits: { reason: string; service: string; on: string; condition: string }[] = [
    {
      reason: "the API server needs the certs job's PKI",
      service: "kube-apiserver",
      on: "certs",
      condition: "service_completed_successfully",
    },
    {
      reason: "the API server needs a healthy etcd",
      service: "kube-apiserver",
      on: "etcd",
      condition: "service_healthy",
    },
    {
      reason: "setup installs CRDs and RBAC through a ready API server",
      service: "setup",
      on: "kube-apiserver",
      condition: "service_healthy",
    },
    {
      reason: "the controller needs the CRDs, RBAC and its token kubeconfig",
      service: "controller",
      on: "setup",
      condition: "service_completed_successfully",
    },
    {
      reason: "the controller's informers need a ready API server",
      service: "controller",
      on: "kube-apiserver",
      condition: "service_healthy",
    },
    {
      reason: "the controller's cloud list-watch needs a healthy cloud",
      service: "controller",
      on: "cloud",
      condition: "service_healthy",
    },
  ];
  test.each(waits)("$service waits for $on ($condition): $reason", ({ service: name, on, condition }) => {
    expect(service(name).depends_on?.[on]?.condition).toBe(condition);
  });

  test("a service waits for one-shot jobs to complete and for long-running services to be healthy", () => {
    for (const [name, s] of Object.entries(services)) {
      for (const [dependency, { condition }] of Object.entries(s.depends_on ?? {})) {
        const oneShot = service(dependency).restart === "no";
        expect(condition, `${name} → ${dependency}`).toBe(
          oneShot ? "service_completed_successfully" : "service_healthy",
        );
        if (!oneShot)
          expect(service(dependency).healthcheck, `${dependency} has a healthcheck`).toBeDefined();
      }
    }
  });

  test("what a one-shot job writes in a volume is read only by services that wait for that job", () => {
    const jobs = Object.entries(services).filter(([, s]) => s.restart === "no");
    const dependsOn = (name: string, job: string): boolean =>
      Object.keys(service(name).depends_on ?? {}).some((d) => d === job || dependsOn(d, job));
    for (const [job, js] of jobs) {
      const written = (js.volumes ?? []).filter((v) => !v.endsWith(":ro")).map((v) => v.split(":")[0]);
      for (const [name, s] of Object.entries(services)) {
        if (name === job) continue;
        for (const mount of s.volumes ?? []) {
          if (written.includes(mount.split(":")[0]))
            expect(dependsOn(name, job), `${name} waits for ${job}`).toBe(true);
        }
      }
    }
  });
});

describe("images", () => {
  test("every Dockerfile is multi-stage, and the stages compose builds copy from an earlier stage", () => {
    expect([...dockerfiles.keys()].toSorted()).toEqual([
      "Dockerfile",
      "Dockerfile.etcd",
      "Dockerfile.kube-apiserver",
    ]);
    for (const [file, stages] of dockerfiles) expect(stages.length, file).toBeGreaterThanOrEqual(2);
    for (const name of Object.keys(services)) {
      const { stages, stage } = imageOf(name);
      expect(
        copiesOf(stages, stage).some((c) => c.from !== undefined),
        `${name}'s image`,
      ).toBe(true);
    }
  });

  test("every stage compose runs has a numeric, non-root USER; the Deployment runs as the same uid", async () => {
    for (const name of Object.keys(services)) {
      const { stages, stage } = imageOf(name);
      const user = effectiveUser(stages, stage);
      expect(user, `${name}'s image sets USER`).toMatch(/^\d+(:\d+)?$/);
      expect(Number(user?.split(":")[0]), `${name}'s image is not root`).toBeGreaterThan(0);
    }
    const deployment = parse(await readFile(join(ROOT, "deploy", "deployment.yaml"), "utf8")) as {
      spec: { template: { spec: { securityContext: { runAsUser: number; runAsGroup: number } } } };
    };
    const pod = deployment.spec.template.spec.securityContext;
    expect(effectiveUser(imageOf("controller").stages, imageOf("controller").stage)).toBe(
      `${pod.runAsUser}:${pod.runAsGroup}`,
    );
  });

  const pins: { reason: string; image: RegExp; tag: () => string | RegExp }[] = [
    {
      reason: "the Node the project runs on (scripts/node24.sh), slim",
      image: /^node:/,
      tag: () => `${node24}-bookworm-slim`,
    },
    {
      reason: "the Kubernetes release envtest builds (envtest/src/versions.ts)",
      image: /^registry\.k8s\.io\/kube-apiserver:/,
      tag: () => KUBERNETES_VERSION,
    },
    {
      reason: "the etcd release envtest builds, in kubeadm's image naming",
      image: /^registry\.k8s\.io\/etcd:/,
      tag: () => `${ETCD_VERSION.replace(/^v/, "")}-0`,
    },
    {
      reason: "a Go that builds the probe's go.mod and the Kubernetes release",
      image: /^golang:/,
      tag: () => new RegExp(`^${goMod?.replace(".", "\\.")}\\.\\d+-bookworm$`),
    },
  ];
  test("every external image is pinned to an exact tag (a digest may follow), never latest", () => {
    const external = [...dockerfiles.values()].flatMap((stages) =>
      stages.map((s) => s.base).filter((base) => !stages.some((p) => p.name === base)),
    );
    expect(external.length).toBeGreaterThan(0);
    for (const image of external) {
      const [, tag] = /^[^@]+:([^@/]+)(@sha256:[0-9a-f]{64})?$/.exec(image) ?? [];
      expect(tag, `${image} has a tag`).toBeDefined();
      expect(tag, image).not.toBe("latest");
      expect(tag, `${image} names an exact version`).toMatch(/\d+\.\d+\.\d+/);
      expect(
        pins.some((p) => p.image.test(image)),
        `${image} is one of the pinned images`,
      ).toBe(true);
    }
    for (const s of Object.values(services)) expect(s.image, "services build their images").toBeUndefined();
  });
  test.each(pins)("$image is in step: $reason", ({ image, tag }) => {
    const bases = [...dockerfiles.values()]
      .flatMap((stages) => stages.map((s) => s.base))
      .filter((b) => image.test(b));
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) {
      const expected = tag();
      const actual = base
        .replace(/@sha256:.*$/, "")
        .split(":")
        .at(-1);
      if (typeof expected === "string") expect(actual).toBe(expected);
      else expect(actual).toMatch(expected);
    }
    expect(Number(goMod?.split(".")[1])).toBeGreaterThanOrEqual(Number(MINIMUM_GO_VERSION.split(".")[1]));
  });

  test("the control-plane images are the upstream ones, and start the right binary", () => {
    const entrypoint = (name: string) =>
      imageOf(name).stage.instructions.findLast((i) => i.keyword === "ENTRYPOINT")?.args;
    expect(baseImageOf(imageOf("etcd").stages, imageOf("etcd").stage)).toMatch(/^registry\.k8s\.io\/etcd:/);
    expect(entrypoint("etcd")).toBe('["/usr/local/bin/etcd"]');
    expect(baseImageOf(imageOf("kube-apiserver").stages, imageOf("kube-apiserver").stage)).toMatch(
      /^registry\.k8s\.io\/kube-apiserver:/,
    );
    expect(entrypoint("kube-apiserver")).toBe('["/usr/local/bin/kube-apiserver"]');
  });
});

describe("the build secret npm-ca (a CA bundle for npm behind a TLS-intercepting proxy)", () => {
  test("every install step (npm ci, npm install) gets it, and it stays a build secret", async () => {
    const dockerfile = await readFile(join(ROOT, "Dockerfile"), "utf8");
    const installs = dockerfile
      .split(/\n(?=[A-Z])/)
      .filter((i) => /^RUN\b[\s\S]*\bnpm (ci|install)\b/.test(i));
    expect(installs.length, "Dockerfile's install steps").toBeGreaterThanOrEqual(3);
    for (const step of installs)
      expect(step, "each install mounts the secret").toContain("--mount=type=secret,id=npm-ca");
    for (const [name, s] of Object.entries(services)) {
      if (s.build?.dockerfile === "Dockerfile")
        expect(s.build.secrets, `${name}'s build`).toEqual(["npm-ca"]);
      expect(s.secrets ?? [], `${name} never mounts it at run time`).not.toContain("npm-ca");
    }
    // Where no NODE_EXTRA_CA_CERTS is set, an empty file: the build trusts only npm's own CAs.
    expect(compose.secrets["npm-ca"]?.file).toBe("./deploy/compose/no-extra-ca.pem");
    expect(await readFile(join(ROOT, "deploy/compose/no-extra-ca.pem"), "utf8")).toBe("");
  });
});

describe("hardening and ports", () => {
  test.each(Object.keys(services))("%s: read-only root, no capabilities, no privilege escalation", (name) => {
    const s = service(name);
    expect(s.read_only).toBe(true);
    expect(s.cap_drop).toEqual(["ALL"]);
    expect(s.security_opt).toContain("no-new-privileges:true");
  });

  const published: { reason: string; service: string; port: string }[] = [
    { reason: "the cloud console, as `npm start` serves it", service: "cloud", port: "127.0.0.1:8080:8080" },
    {
      reason: "the controller's /metrics, /healthz, /readyz",
      service: "controller",
      port: "127.0.0.1:8081:8081",
    },
    {
      reason: "kubectl on the host (host.kubeconfig)",
      service: "kube-apiserver",
      port: "127.0.0.1:6443:6443",
    },
  ];
  test.each(published)("$service publishes $port: $reason", ({ service: name, port }) => {
    expect(service(name).ports).toEqual([port]);
  });
  test("the ports are `npm start`'s: the console and the metrics at the same URLs", () => {
    expect(service("cloud").ports).toEqual([`127.0.0.1:${DEFAULT_CLOUD_PORT}:${DEFAULT_CLOUD_PORT}`]);
    expect(service("controller").ports).toEqual([
      `127.0.0.1:${DEFAULT_METRICS_PORT}:${DEFAULT_METRICS_PORT}`,
    ]);
  });
  test("nothing else is published, and only on the host's loopback", () => {
    const all = Object.values(services).flatMap((s) => s.ports ?? []);
    expect(all.toSorted()).toEqual(published.map((p) => p.port).toSorted());
  });
});

describe("networks: each service reaches only what it talks to", () => {
  /** The networks `name` joins; "none" for a service without any. */
  const networksOf = (name: string): string[] => {
    const s = service(name);
    if (s.network_mode === "none") return ["none"];
    return s.networks ?? ["default"];
  };
  /** Whether `a` and `b` share a network. */
  const shareNetwork = (a: string, b: string) =>
    networksOf(a).some((n) => n !== "none" && networksOf(b).includes(n));

  const joins: { reason: string; service: string; networks: string[] }[] = [
    { reason: "it only writes files in its volume", service: "certs", networks: ["none"] },
    { reason: "its one client is the API server", service: "etcd", networks: ["control-plane"] },
    {
      reason: "it is etcd's client, and serves the Kubernetes API",
      service: "kube-apiserver",
      networks: ["control-plane", "kubernetes"],
    },
    { reason: "it calls the Kubernetes API as the admin", service: "setup", networks: ["kubernetes"] },
    { reason: "it serves the cloud's API to the controller", service: "cloud", networks: ["cloud"] },
    {
      reason: "it calls the Kubernetes API and the cloud's",
      service: "controller",
      networks: ["kubernetes", "cloud"],
    },
  ];
  test.each(joins)("$service joins only the networks it needs: $reason", ({ service: name, networks }) => {
    expect(networksOf(name).toSorted()).toEqual(networks.toSorted());
  });
  test("every service is in the table, and every network it names is declared", () => {
    expect(joins.map((j) => j.service).toSorted()).toEqual(Object.keys(services).toSorted());
    const declared = Object.keys(compose.networks);
    for (const name of Object.keys(services))
      for (const n of networksOf(name).filter((n) => n !== "none"))
        expect(declared, `${name}'s network ${n}`).toContain(n);
  });

  const reaches: { reason: string; from: string; to: string; shared: boolean }[] = [
    { reason: "the API server stores everything in etcd", from: "kube-apiserver", to: "etcd", shared: true },
    { reason: "setup installs CRDs and RBAC", from: "setup", to: "kube-apiserver", shared: true },
    {
      reason: "the controller's informers and writes",
      from: "controller",
      to: "kube-apiserver",
      shared: true,
    },
    { reason: "the controller's cloud calls and watch", from: "controller", to: "cloud", shared: true },
    {
      reason: "the controller writes Kubernetes through the API server and its RBAC, never etcd",
      from: "controller",
      to: "etcd",
      shared: false,
    },
    { reason: "the cloud has nothing to do with etcd", from: "cloud", to: "etcd", shared: false },
    { reason: "nor with the Kubernetes API", from: "cloud", to: "kube-apiserver", shared: false },
    {
      reason: "setup, the admin, still goes through the API server",
      from: "setup",
      to: "etcd",
      shared: false,
    },
  ];
  test.each(reaches)("$from → $to: $shared ($reason)", ({ from, to, shared }) => {
    expect(shareNetwork(from, to)).toBe(shared);
  });

  test("control-plane holds etcd and the API server only, and is internal (no route out)", () => {
    const members = Object.keys(services).filter((name) => networksOf(name).includes("control-plane"));
    expect(members.toSorted()).toEqual(["etcd", "kube-apiserver"]);
    expect(compose.networks["control-plane"]?.internal).toBe(true);
  });
});

describe("healthchecks probe what each service serves", () => {
  const checks: { reason: string; service: string; url: (s: Service) => string }[] = [
    {
      reason: "etcd answers its client port",
      service: "etcd",
      url: (s) => `${flagValue(s.command ?? [], "listen-client-urls")?.replace("0.0.0.0", "127.0.0.1")}`,
    },
    {
      reason: "kube-apiserver is ready (/readyz) on its secure port",
      service: "kube-apiserver",
      url: (s) => `https://127.0.0.1:${flagValue(s.command ?? [], "secure-port")}/readyz`,
    },
    {
      reason: "the cloud's database answers (/healthz) on CLOUD_PORT",
      service: "cloud",
      url: (s) => `http://127.0.0.1:${s.environment?.CLOUD_PORT}/healthz`,
    },
    {
      reason: "the controller finished its startup resync (/readyz) on METRICS_ADDRESS's port",
      service: "controller",
      url: (s) => `http://127.0.0.1:${portOf(s.environment?.METRICS_ADDRESS ?? "")}/readyz`,
    },
  ];
  test.each(checks)("$service: $reason", ({ service: name, url }) => {
    const s = service(name);
    const probe = s.healthcheck?.test ?? [];
    expect(probe[0], "exec form: no shell in the image").toBe("CMD");
    expect(probe.join(" ")).toContain(url(s));
    expect(s.healthcheck?.retries).toBeGreaterThan(0);
  });
  test("the one-shot jobs have none (compose waits for them to exit 0)", () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.restart === "no", name).toBe(s.healthcheck === undefined);
    }
  });
});

describe("the control plane runs with envtest's flags", () => {
  const apiServer = service("kube-apiserver").command ?? [];
  const envtestApiServer = apiServerFlags({
    binary: "kube-apiserver",
    port: Number(flagValue(apiServer, "secure-port")),
    etcdUrl: flagValue(service("etcd").command ?? [], "advertise-client-urls") ?? "",
    pkiDir: "/pki",
    logFile: "",
  });
  const apiServerDifferences: { reason: string; flag: string; compose: string | undefined }[] = [
    {
      reason: "other containers connect to it; the host port is published on loopback only",
      flag: "bind-address",
      compose: "0.0.0.0",
    },
    {
      reason: "a container has a default route, so the API server finds its address itself",
      flag: "advertise-address",
      compose: undefined,
    },
  ];
  test.each(apiServerDifferences)(
    "kube-apiserver --$flag differs on purpose: $reason",
    ({ flag, compose: value }) => {
      expect(flagValue(apiServer, flag)).toBe(value);
    },
  );
  test("kube-apiserver: every other flag is envtest's, with the same value", () => {
    const differ = new Set(apiServerDifferences.map((d) => d.flag));
    expect(apiServer.filter((f) => !differ.has(flagName(f)))).toEqual(
      envtestApiServer.filter((f) => !differ.has(flagName(f))),
    );
    expect(flagValue(apiServer, "service-account-issuer")).toBe(SERVICE_ACCOUNT_ISSUER);
  });

  const etcd = service("etcd").command ?? [];
  const envtestEtcd = etcdFlags({
    binary: "etcd",
    dataDir: "/var/lib/etcd/data",
    clientPort: 2379,
    peerPort: 2380,
    logFile: "",
  });
  const etcdDifferences: { reason: string; flag: string; compose: string | undefined }[] = [
    { reason: "a name for this member (any name works for one member)", flag: "name", compose: "shapes" },
    {
      reason: "the API server container connects over the compose network",
      flag: "listen-client-urls",
      compose: "http://0.0.0.0:2379",
    },
    {
      reason: "clients are told the service name",
      flag: "advertise-client-urls",
      compose: "http://etcd:2379",
    },
    {
      reason: "the member's name changed with it",
      flag: "initial-cluster",
      compose: "shapes=http://127.0.0.1:2380",
    },
    {
      reason: "the demo's data persists in a volume, so etcd syncs its writes",
      flag: "unsafe-no-fsync",
      compose: undefined,
    },
  ];
  test.each(etcdDifferences)("etcd --$flag differs on purpose: $reason", ({ flag, compose: value }) => {
    expect(flagValue(etcd, flag)).toBe(value);
  });
  test("etcd: every other flag is envtest's, with the same value; its data is in its volume", () => {
    const differ = new Set(etcdDifferences.map((d) => d.flag));
    expect(etcd.filter((f) => !differ.has(flagName(f)))).toEqual(
      envtestEtcd.filter((f) => !differ.has(flagName(f))),
    );
    expect(volumeAt("etcd", flagValue(etcd, "data-dir") ?? "")?.volume).toBe("etcd-data");
  });

  describe("with the PKI the certs job makes", () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "compose-pki-"));
      const args = service("certs").command?.slice(2) ?? [];
      const { values } = parseArgs({ args, options: CERTS_OPTIONS, strict: true, allowPositionals: false });
      expect(values.dir).toBe("/pki");
      await ensureComposePki({ dir, server: values.server ?? "", hostServer: values["host-server"] ?? "" });
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    test("every /pki file the API server, its healthcheck and the setup job name exists", async () => {
      const named = [
        ...apiServer,
        ...(service("kube-apiserver").healthcheck?.test ?? []),
        ...(service("setup").command ?? []),
      ]
        .map((a) => /(\/pki\/[\w.-]+)/.exec(a)?.[1])
        .filter((p): p is string => p !== undefined);
      expect(named.length).toBeGreaterThanOrEqual(7);
      for (const path of named)
        await expect(readFile(join(dir, posix.basename(path)), "utf8")).resolves.not.toBe("");
      for (const name of ["kube-apiserver", "setup"])
        expect(volumeAt(name, "/pki/ca.crt")?.volume).toBe("pki");
      expect(service("certs").volumes).toEqual(["pki:/pki"]);
    });

    test("the admin kubeconfig of the containers names the API server service; the host's, the published port", async () => {
      const server = (file: string) =>
        readFile(join(dir, file), "utf8").then(
          (t) => (parse(t) as { clusters: { cluster: { server: string } }[] }).clusters[0]?.cluster.server,
        );
      expect(await server("admin.kubeconfig")).toBe(
        `https://kube-apiserver:${flagValue(apiServer, "secure-port")}`,
      );
      expect(await server("host.kubeconfig")).toBe(
        `https://${service("kube-apiserver").ports?.[0]?.split(":").slice(0, 2).join(":")}`,
      );
    });
  });
});

describe("the controller and the cloud, through their own parsers", () => {
  test("the setup job's flags are its own, and it writes where the controller reads", () => {
    const args = service("setup").command?.slice(2) ?? [];
    const { values } = parseArgs({ args, options: SETUP_OPTIONS, strict: true, allowPositionals: false });
    const written = volumeAt("setup", values.out ?? "");
    const read = volumeAt("controller", service("controller").environment?.KUBECONFIG ?? "");
    expect(written).toBeDefined();
    expect(read).toEqual(written);
    expect(service("controller").volumes).toEqual([`${read?.volume}:/var/run/shapes:ro`]);
  });

  test("the controller's environment: every variable is an option of controller/src/config.ts, and it parses", async () => {
    const s = service("controller");
    expect(s.command).toEqual(["node", ...CONTROLLER_NODE_FLAGS, "controller/dist/main.js"]);
    const env = s.environment ?? {};
    // Every value a string: an unquoted `${VAR:-}` that interpolates to nothing is YAML's null, not "".
    for (const [name, value] of Object.entries(env)) expect(typeof value, name).toBe("string");
    const known = new Set<string>([...OPTIONS.map((o) => o.env), ...TRACING_ENV]);
    for (const name of Object.keys(env)) expect(known, `${name} is read by the controller`).toContain(name);
    const config = loadConfig([], withSecretsOnDisk(env));
    if (config === "help") throw new Error("cannot happen: no --help given");
    expect(config.cloudToken).toBe(
      (await readFile(join(ROOT, compose.secrets["cloud-token"]?.file ?? ""), "utf8")).trim(),
    );
    const cloudUrl = new URL(config.cloudUrl);
    expect(cloudUrl.hostname).toBe("cloud");
    expect(Number(cloudUrl.port)).toBe(Number(service("cloud").environment?.CLOUD_PORT));
    expect(config.metricsAddress).toBe("0.0.0.0:8081");
    // Other containers reach the port: /metrics and /why answer only a token the API server accepts
    // (`auto` would be `none` here, outside a cluster).
    expect(config.metricsAuth).toBe("kubernetes");
    // The cloud's API token only: not its admin token.
    expect(s.secrets).toEqual(["cloud-token"]);
  });

  test("the cloud's environment: every variable is a flag of the mock cloud's CLI, and it parses", () => {
    const s = service("cloud");
    expect(s.command).toEqual(["node", "mock-cloud/src/cli.ts"]);
    const env = s.environment ?? {};
    const known: (string | undefined)[] = [...helpText().matchAll(/^\s+env (\w+)$/gm)].map((m) => m[1]);
    expect(known.length).toBeGreaterThan(5);
    known.push(...CLOUD_TRACING_ENV);
    for (const [name, value] of Object.entries(env)) expect(typeof value, name).toBe("string");
    for (const name of Object.keys(env)) expect(known, `${name} is read by the cloud`).toContain(name);
    const cmd = parseCommandLine([], withSecretsOnDisk(env));
    if (cmd.kind !== "run") throw new Error("cannot happen: no --help given");
    expect(cmd.host).toBe("0.0.0.0"); // other containers and the published port reach it
    // The routes without a token answer for its service name too (the controller's CLOUD_URL names it).
    expect(cmd.allowedHosts).toEqual([new URL(service("controller").environment?.CLOUD_URL ?? "").hostname]);
    expect(cmd.port).toBe(8080);
    expect(volumeAt("cloud", cmd.db)?.volume).toBe("cloud-data");
    expect(cmd.token).not.toBe("");
    // /admin takes a token of its own, not the API token that the controller holds.
    expect(cmd.adminToken).toBeDefined();
    expect(cmd.adminToken).not.toBe(cmd.token);
    expect(s.secrets).toEqual(["cloud-token", "cloud-admin-token"]);
  });

  test("the cloud's tracing reads the same OTEL_* variables as the controller's: one endpoint traces both", () => {
    expect([...CLOUD_TRACING_ENV].toSorted()).toEqual([...TRACING_ENV].toSorted());
  });

  test("the cloud's admin token is mounted in the cloud's container only", () => {
    for (const [name, s] of Object.entries(services))
      expect(s.secrets?.includes("cloud-admin-token") ?? false, name).toBe(name === "cloud");
  });
});

describe("every file the images' entry points load is in the image", () => {
  /** The `node <file>` entry points of the services built from `target`, commands and healthchecks. */
  const entryPoints = (target: string): string[] => [
    ...new Set(
      Object.values(services)
        .filter((s) => s.build?.target === target)
        .flatMap((s) => [s.command ?? [], s.healthcheck?.test.slice(1) ?? []])
        .filter((argv) => argv[0] === "node")
        // The script is node's first argument that is not a flag (`node --max-semi-space-size=2 <file>`).
        .map((argv) => argv.slice(1).find((a) => !a.startsWith("-")))
        .filter((file): file is string => file !== undefined),
    ),
  ];
  /** The production dependencies of these workspace folders, and the workspace packages themselves. */
  const productionOf = (folders: readonly string[]): string[] =>
    folders.flatMap((dir) => {
      const pkg = JSON.parse(readFileSync(join(ROOT, dir, "package.json"), "utf8")) as {
        name: string;
        dependencies?: Record<string, string>;
      };
      return [pkg.name, ...Object.keys(pkg.dependencies ?? {})];
    });
  const targets: {
    reason: string;
    target: string;
    /** The workspaces whose production dependencies the image installs (deploy/images/only-workspaces.ts). */
    workspaces?: string[];
    /** Packages that must NOT be in the image. */
    absent?: string[];
    dependencies: string[];
    data: string[];
  }[] = [
    {
      reason: "the controller: its workspace and the library's production dependencies, not the cloud's",
      target: "controller",
      workspaces: ["library", "controller"],
      absent: ["express", "better-sqlite3"],
      dependencies: productionOf(["library", "controller"]),
      data: ["package.json"],
    },
    {
      reason: "the mock cloud: its workspace's production dependencies, not the library (another program)",
      target: "cloud",
      workspaces: ["mock-cloud"],
      absent: ["reconcile-kit"],
      dependencies: productionOf(["mock-cloud"]),
      // The console's page, as `npm start` serves it (mock-cloud/src/console/console-app.ts reads static/).
      data: [
        ...readdirSync(join(ROOT, "mock-cloud", "src", "console", "static")).map(
          (f) => `mock-cloud/src/console/static/${f}`,
        ),
        "package.json",
      ],
    },
    {
      reason: "the compose jobs (envtest's PKI code needs node-forge, a devDependency)",
      target: "tools",
      dependencies: [...Object.keys(packageJson.dependencies), ...Object.keys(packageJson.devDependencies)],
      data: [
        "crds/shapes.example.com_shapes.yaml",
        "crds/shapes.example.com_shaperefs.yaml",
        "deploy/namespace.yaml",
        "deploy/rbac.yaml",
        "package.json",
      ],
    },
  ];
  test.each(targets)("$target: $reason", ({ target, workspaces: only, absent, dependencies, data }) => {
    const stages = dockerfiles.get("Dockerfile") ?? [];
    const stage = stageOf(stages, target);
    const copies = copiesOf(stages, stage);
    // The repository's layout is kept (relative imports resolve): a context COPY puts X at ./X.
    for (const c of copies.filter((c) => c.from === undefined && !c.sources.includes("package-lock.json"))) {
      for (const source of c.sources)
        expect([`./${source}`, "./"], `COPY ${source}`).toContain(c.destination);
    }
    // An entry point that is a workspace's build (controller/dist/main.js) is followed from its sources
    // (controller/src/main.ts): the build, not those sources, must be in the image (expectBuilt below).
    const builtFrom = (file: string) => /^(.+)\/dist\/(.+)\.js$/.exec(file);
    const builtDirs = entryPoints(target).flatMap((f) => builtFrom(f)?.[1] ?? []);
    const entries = entryPoints(target).map((f) => {
      const m = builtFrom(f);
      return m ? `${m[1]}/src/${m[2]}.ts` : f;
    });
    expect(entries.length).toBeGreaterThan(0);
    const graph = importGraph(ROOT, entries);
    if (target === "cloud") expect(graph.files).toContain("mock-cloud/src/console/console-app.ts");
    // node_modules (and, for an image cut down to its workspaces, the package.json that says so) come from
    // a stage that installed exactly those dependencies.
    const modules = copies.find((c) => c.sources.includes("/app/node_modules"));
    const installer = stages.find((s) => s.name === modules?.from);
    const fromInstaller = (path: string) =>
      copies.some((c) => c.from === installer?.name && c.sources.includes(`/app/${path}`));
    /** `dir`'s build (dir/dist) is in the image, from a stage that ran `tsc -p dir/tsconfig.build.json`. */
    const expectBuilt = (dir: string, what: string) => {
      const dist = copies.find((c) => c.from !== undefined && c.sources.includes(`/app/${dir}/dist`));
      expect(dist, `${what}'s build (${dir}/dist) is COPYed into ${target}`).toBeDefined();
      const builder = stages.find((s) => s.name === dist?.from);
      expect(
        builder?.instructions.some(
          (i) => i.keyword === "RUN" && i.args.includes(`${dir}/tsconfig.build.json`),
        ),
        `${dist?.from} builds ${dir}`,
      ).toBe(true);
    };
    for (const dir of builtDirs) {
      expectBuilt(dir, dir);
      expect(isCopied(copies, `${dir}/package.json`), `${dir}/package.json is COPYed into ${target}`).toBe(
        true,
      );
    }
    for (const file of [...graph.files, ...data]) {
      if (builtDirs.some((dir) => file.startsWith(`${dir}/src/`))) continue; // in its build instead
      expect(isCopied(copies, file) || fromInstaller(file), `${file} is COPYed into ${target}`).toBe(true);
      expect(isDockerIgnored(ignored, file), `${file} passes .dockerignore`).toBe(false);
    }
    for (const pkg of graph.packages) expect(dependencies, `${pkg} is installed in ${target}`).toContain(pkg);
    for (const pkg of absent ?? [])
      expect(dependencies, `${pkg} is not installed in ${target}`).not.toContain(pkg);
    // A workspace package of this repo is found through its package.json. One that runs from its sources
    // (@shapes/envtest) had its files followed above; one that is built (reconcile-kit) runs as its build, as
    // it would once installed: its dist/ from a stage that built it.
    for (const pkg of graph.packages.filter((p) => workspaces.has(p))) {
      const dir = workspaces.get(pkg) ?? "";
      expect(isCopied(copies, `${dir}/package.json`), `${dir}/package.json is COPYed into ${target}`).toBe(
        true,
      );
      if (!sources.has(pkg)) expectBuilt(dir, pkg);
    }
    const install =
      installer?.instructions.find((i) => i.keyword === "RUN" && /npm (ci|install)/.test(i.args))?.args ?? "";
    if (only) {
      // Cut down to these workspaces, then their production dependencies at the locked versions.
      expect(install).toContain(`node deploy/images/only-workspaces.ts ${only.join(" ")}`);
      expect(install).toContain("npm install --omit=dev");
      for (const dir of only) expect(isCopiedInto(stages, installer?.name, `${dir}/package.json`)).toBe(true);
    } else {
      expect(install).toContain("npm ci --include=dev");
    }
    expect(stageChain(stages, stage).map((s) => s.name)).toContain("base");
  });

  test(".dockerignore keeps out what must never reach an image", () => {
    for (const path of [
      ".git/config",
      "node_modules/yaml/package.json",
      ".demo/env",
      "e2e/artifacts/x.log",
      "controller/src/config.test.ts",
    ]) {
      expect(isDockerIgnored(ignored, path), path).toBe(true);
    }
  });
});
