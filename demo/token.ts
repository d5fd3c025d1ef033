/**
 * The demo's tokens (the mock cloud's, the two-worlds page's): made once per state folder and kept, so a
 * second `npm start` keeps them too.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { writePrivateFile } from "@shapes/envtest";

/**
 * The token in `path`; when the file is missing, a fresh random one (32 hex characters) is written
 * there (0600) first. An empty file is an error rather than an empty token.
 */
export async function loadOrCreateToken(path: string): Promise<{ token: string; created: boolean }> {
  let text: string | undefined;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  if (text !== undefined) {
    const token = text.trim();
    if (!token) throw new Error(`cannot use the token in ${path}: the file is empty (delete it)`);
    return { token, created: false };
  }
  const token = randomBytes(16).toString("hex");
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writePrivateFile(path, `${token}\n`);
  return { token, created: true };
}
