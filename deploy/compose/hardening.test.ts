import { describe, expect, test } from "vitest";
import { hardeningProblems, type ContainerInspect } from "./hardening.ts";

/** What `docker inspect` shows for a container of docker-compose.yml as it is. */
const hardened: ContainerInspect = {
  Id: "c1",
  Config: { User: "1000:1000", Labels: { "com.docker.compose.service": "cloud" } },
  State: { Status: "running", ExitCode: 0, Health: { Status: "healthy" } },
  HostConfig: {
    ReadonlyRootfs: true,
    CapDrop: ["ALL"],
    CapAdd: null,
    Privileged: false,
    SecurityOpt: ["no-new-privileges:true"],
    PortBindings: { "8080/tcp": [{ HostIp: "127.0.0.1", HostPort: "8080" }] },
  },
};

describe("hardeningProblems", () => {
  test("none for a container as docker-compose.yml declares it", () => {
    expect(hardeningProblems(hardened)).toEqual([]);
  });

  test.each([
    {
      reason: "user: root in the compose file",
      change: { Config: { ...hardened.Config, User: "root" } },
      want: 'runs as "root", not 1000:1000',
    },
    {
      reason: "no USER at all",
      change: { Config: { ...hardened.Config, User: "" } },
      want: 'runs as "root", not 1000:1000',
    },
    {
      reason: "read_only dropped",
      change: { HostConfig: { ...hardened.HostConfig, ReadonlyRootfs: false } },
      want: "its root file system is writable",
    },
    {
      reason: "cap_drop dropped",
      change: { HostConfig: { ...hardened.HostConfig, CapDrop: null } },
      want: "does not drop every capability",
    },
    {
      reason: "a capability added back",
      change: { HostConfig: { ...hardened.HostConfig, CapAdd: ["NET_ADMIN"] } },
      want: "adds capabilities NET_ADMIN",
    },
    {
      reason: "privileged: true",
      change: { HostConfig: { ...hardened.HostConfig, Privileged: true } },
      want: "is privileged",
    },
    {
      reason: "security_opt dropped",
      change: { HostConfig: { ...hardened.HostConfig, SecurityOpt: null } },
      want: "may gain privileges (no no-new-privileges)",
    },
    {
      reason: 'a port published as "8080:8080" (every address)',
      change: {
        HostConfig: {
          ...hardened.HostConfig,
          PortBindings: { "8080/tcp": [{ HostIp: "", HostPort: "8080" }] },
        },
      },
      want: 'publishes 8080/tcp on "every address"',
    },
  ])("$reason", ({ change, want }) => {
    expect(hardeningProblems({ ...hardened, ...change })).toEqual([want]);
  });
});
