/**
 * A headless Chromium for the pages of the project (the cloud console, the demo's two-worlds page): the
 * browser tests drive it, and so does the script that takes the docs' screenshots
 * (demo/screenshots.ts). It is Debian's Chromium, driven by playwright-core: on a closed network no
 * browser can be downloaded (scripts/ci-apt.sh installs it).
 */
import { accessSync, constants } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";

/** The browser: $CHROMIUM_PATH, else Debian's chromium package. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * What a headless Chromium needs on a closed network, as root, in a container: no sandbox (root), the new
 * headless mode, no GPU, /tmp instead of a small /dev/shm, and none of the background calls home.
 */
export const CHROMIUM_FLAGS = [
  "--headless=new",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--no-first-run",
  "--no-default-browser-check",
  "--disable-extensions",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-default-apps",
  "--disable-sync",
  "--disable-domain-reliability",
  "--metrics-recording-only",
  "--mute-audio",
];

/** The browser's path; throws "cannot <purpose>: no Chromium at …", saying how to get one, when there is none. */
export function requireChromium(purpose: string): string {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK);
    return CHROMIUM_PATH;
  } catch {
    throw new Error(
      `cannot ${purpose}: no Chromium at ${CHROMIUM_PATH}` +
        `${process.env.CHROMIUM_PATH ? " (from CHROMIUM_PATH)" : ""}. Install Debian's: ` +
        "`sudo apt-get install -y chromium` (or `bash scripts/ci-apt.sh`), or set CHROMIUM_PATH to a Chromium.",
    );
  }
}

/** Starts a headless Chromium (see requireChromium for a missing one). */
export function launchChromium(purpose: string): Promise<Browser> {
  const executablePath = requireChromium(purpose);
  return chromium.launch({ executablePath, headless: true, args: CHROMIUM_FLAGS });
}

/** What a page did that it must not: script errors, console errors, CSP violations, dialogs. */
export interface Misbehaviour {
  readonly problems: string[];
}

/**
 * Records a page's misbehaviour from now on. Chromium logs every HTTP error answer as a console error; the
 * pages handle those themselves, so they are not counted.
 */
export function watchMisbehaviour(page: Page): Misbehaviour {
  const seen: Misbehaviour = { problems: [] };
  page.on("pageerror", (e) => seen.problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource: the server responded")) {
      seen.problems.push(`console error: ${m.text()}`);
    }
  });
  page.on("dialog", (d) => {
    seen.problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  return seen;
}
