import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ETCD_VERSION, KUBERNETES_VERSION } from "@shapes/envtest";
import { interpolate } from "../build-context.ts";
import {
  DOCKERFILES,
  baseImagesOf,
  debianMirror,
  node24Version,
  recipeFor,
  type Versions,
} from "./stand-ins.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const versions: Versions = { node: "24.21.0", kubernetes: "v1.36.3", etcd: "v3.6.8" };

describe("baseImagesOf", () => {
  test("every FROM that is not an earlier stage, once, in order", () => {
    const dockerfile = [
      "FROM node:24.21.0-bookworm-slim AS base",
      "FROM base AS deps",
      "FROM golang:1.26.8-bookworm AS probe",
      "FROM registry.k8s.io/kube-apiserver:v1.36.3",
    ].join("\n");
    const etcd = "FROM node:24.21.0-bookworm-slim AS data-dir\nFROM registry.k8s.io/etcd:3.6.8-0\n";
    expect(baseImagesOf([dockerfile, etcd])).toEqual([
      "node:24.21.0-bookworm-slim",
      "golang:1.26.8-bookworm",
      "registry.k8s.io/kube-apiserver:v1.36.3",
      "registry.k8s.io/etcd:3.6.8-0",
    ]);
  });

  test("the repository's Dockerfiles name exactly the four images a stand-in exists for", async () => {
    const texts = await Promise.all(DOCKERFILES.map((f) => readFile(join(ROOT, f), "utf8")));
    const real: Versions = {
      node: await node24Version(),
      kubernetes: KUBERNETES_VERSION,
      etcd: ETCD_VERSION,
    };
    const recipes = baseImagesOf(texts).map((image) => recipeFor(image, real));
    expect(recipes.map((r) => ("error" in r ? r.error : r.kind)).sort()).toEqual(
      ["etcd", "golang", "kube-apiserver", "node"].sort(),
    );
  });
});

describe("recipeFor", () => {
  test.each([
    { image: "node:24.21.0-bookworm-slim", want: "node", reason: "the Node of scripts/node24.sh" },
    { image: "golang:1.26.8-bookworm", want: "golang", reason: "any Go release: GOTOOLCHAIN fetches it" },
    { image: "registry.k8s.io/etcd:3.6.8-0", want: "etcd", reason: "envtest's etcd" },
    {
      image: "registry.k8s.io/kube-apiserver:v1.36.3",
      want: "kube-apiserver",
      reason: "envtest's Kubernetes",
    },
    {
      image: "node:22.1.0-bookworm-slim",
      want: "cannot make a stand-in for node:22.1.0-bookworm-slim: this machine's Node is 24.21.0",
      reason: "a stand-in never pretends to be another version",
    },
    {
      image: "registry.k8s.io/kube-apiserver:v1.35.0",
      want: "cannot make a stand-in for registry.k8s.io/kube-apiserver:v1.35.0: envtest builds Kubernetes v1.36.3",
      reason: "the binary is envtest's",
    },
    {
      image: "golang:1.26.8-alpine",
      want: "cannot make a stand-in for golang:1.26.8-alpine: expected golang:X.Y.Z-bookworm",
      reason: "the stand-ins are Debian bookworm",
    },
    {
      image: `node:24.21.0-bookworm-slim@sha256:${"a".repeat(64)}`,
      want: `cannot make a stand-in for node:24.21.0-bookworm-slim@sha256:${"a".repeat(64)}: a stand-in cannot have a pinned digest`,
      reason: "a digest names upstream's bytes",
    },
    {
      image: "postgres:17",
      want: "cannot make a stand-in for postgres:17: no recipe for postgres",
      reason: "only the four images the Dockerfiles name",
    },
  ])("$image: $reason", ({ image, want }) => {
    const recipe = recipeFor(image, versions);
    expect("error" in recipe ? recipe.error : recipe.kind).toBe(want);
  });
});

describe("debianMirror", () => {
  const files = (map: Partial<Record<string, string>>) => (path: string) => Promise.resolve(map[path] ?? "");
  test.each([
    {
      reason: "deb822 sources (bookworm's default)",
      map: {
        "/etc/apt/sources.list.d/debian.sources":
          "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n",
      },
      want: "http://mirror.example/debian",
    },
    {
      reason: "a one-line sources.list, options and all",
      map: { "/etc/apt/sources.list": "deb [arch=amd64] http://mirror.example/debian/ bookworm main\n" },
      want: "http://mirror.example/debian",
    },
    { reason: "no sources: Debian's own", map: {}, want: "http://deb.debian.org/debian" },
  ])("$reason", async ({ map, want }) => {
    expect(await debianMirror(files(map))).toBe(want);
  });
});

describe("interpolate (compose's ${...})", () => {
  test.each([
    {
      text: "127.0.0.1:${PORT:-6443}:6443",
      env: {},
      want: "127.0.0.1:6443:6443",
      reason: "unset: the default",
    },
    { text: "${PORT:-6443}", env: { PORT: "" }, want: "6443", reason: ":- also for an empty value" },
    { text: "${PORT-6443}", env: { PORT: "" }, want: "", reason: "- only when unset" },
    { text: "${PORT:-6443}", env: { PORT: "16443" }, want: "16443", reason: "set: the value" },
    { text: "${NAME}", env: {}, want: "", reason: "no default: empty" },
    { text: "cost $$5", env: {}, want: "cost $5", reason: "$$ is a literal $" },
  ])("$reason", ({ text, env, want }) => {
    expect(interpolate(text, env)).toBe(want);
  });
});
