/**
 * The hardening docker-compose.yml declares for every service, checked on what the engine really runs
 * (`docker inspect`), not on the file: e2e/compose-demo.test.ts.
 */

/** The parts of `docker inspect <container>` read here. */
export interface ContainerInspect {
  Id: string;
  Config: { User: string; Labels: Record<string, string | undefined> };
  State: { Status: string; ExitCode: number; Health?: { Status: string } };
  HostConfig: {
    ReadonlyRootfs: boolean;
    CapDrop: string[] | null;
    CapAdd: string[] | null;
    Privileged: boolean;
    SecurityOpt: string[] | null;
    PortBindings: Record<string, { HostIp: string; HostPort: string }[] | null> | null;
  };
}

/** The uid:gid every container runs as (the `node` user of the Node images; set in each Dockerfile). */
export const COMPOSE_USER = "1000:1000";

/**
 * What is wrong with a container's hardening, one line each; [] when nothing: uid 1000 (never root), a
 * read-only root file system, every capability dropped and none added, not privileged, no privilege
 * escalation, and every published port on the host's loopback only.
 */
export function hardeningProblems(c: ContainerInspect): string[] {
  const problems: string[] = [];
  const host = c.HostConfig;
  if (c.Config.User !== COMPOSE_USER)
    problems.push(`runs as "${c.Config.User || "root"}", not ${COMPOSE_USER}`);
  if (!host.ReadonlyRootfs) problems.push("its root file system is writable");
  if (!(host.CapDrop ?? []).includes("ALL")) problems.push("does not drop every capability");
  if ((host.CapAdd ?? []).length > 0) problems.push(`adds capabilities ${(host.CapAdd ?? []).join(", ")}`);
  if (host.Privileged) problems.push("is privileged");
  if (!(host.SecurityOpt ?? []).some((o) => /^no-new-privileges(:true|=true)?$/.test(o))) {
    problems.push("may gain privileges (no no-new-privileges)");
  }
  for (const [port, bindings] of Object.entries(host.PortBindings ?? {})) {
    for (const b of bindings ?? []) {
      if (b.HostIp !== "127.0.0.1") problems.push(`publishes ${port} on "${b.HostIp || "every address"}"`);
    }
  }
  return problems;
}
