// Debian's Chromium for the tests of pages (the console, the browser example), driven by
// playwright-core; no browser is ever downloaded. `.ci/run` installs it; outside CI a suite that
// needs it is skipped with a message when it is missing.
import { existsSync } from "node:fs";
import { chromium, type BrowserContext, type Page } from "playwright-core";

/** Where Debian's chromium is. */
export const CHROMIUM = "/usr/bin/chromium";

/** True when Chromium is missing and this is not CI: the suite is skipped (it fails in CI). */
export function skipWithoutChromium(suite: string): boolean {
  const missing = !existsSync(CHROMIUM);
  if (missing && !process.env.CI) {
    console.warn(
      `${suite} skipped: ${CHROMIUM} is missing (install Debian's chromium with: apt-get install -y --no-install-recommends chromium, as .ci/run does)`,
    );
  }
  return missing && !process.env.CI;
}

/** The flags this machine needs: no sandbox as root, no GPU, no traffic to Google's hosts. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** A headless Chromium on the fresh profile folder `profile`, 1280×800. */
export function launchChromium(profile: string): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: .ci/run installs it (apt-get install -y --no-install-recommends chromium)`);
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 800 },
    ignoreHTTPSErrors: true,
  });
}

/** Collects the page's content security policy violations and errors into `problems`. */
export function watchProblems(page: Page, problems: string[]): void {
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on("pageerror", (e) => problems.push(String(e)));
}
