// The browser example. `npx vite --config examples/browser/vite.config.ts` serves the page on
// http://localhost:5173 and prints the address to open (with the owner's URL and a client token);
// `npm run build:browser` bundles index.html + main.ts into examples/browser/dist/, with relative
// asset paths so any static server (or a sub-path) can serve it.
import { fileURLToPath } from "node:url";
import { defaultClientConditions, defineConfig, type Plugin } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

/** After the dev server's own banner: which address to open, and what the owner needs. */
const howToOpen: Plugin = {
  name: "chronolog-how-to-open",
  configureServer(server) {
    server.httpServer?.once("listening", () => {
      setTimeout(() => {
        const local = server.resolvedUrls?.local[0] ?? "http://localhost:5173/";
        server.config.logger.info(
          [
            "",
            `  Open ${local}?owner=http://127.0.0.1:50051&token=a-long-random-client-token`,
            "  with an owner started with a config that lists this page's origin in cors.origins and the token:",
            "    npm run serve -- --config examples/config/owner.yaml --plugins examples/quickstart/plugins",
            "",
          ].join("\n"),
        );
      }, 0);
    });
  },
};

export default defineConfig(({ command }) => ({
  root,
  base: "./",
  // The dev server prints its address; a build prints only warnings.
  logLevel: command === "serve" ? "info" : "warn",
  plugins: [howToOpen],
  // "@chronolog/sdk/gen/..." from the SDK's TypeScript sources (its package's chronolog-source condition).
  resolve: { conditions: ["chronolog-source", ...defaultClientConditions] },
  server: { port: 5173, strictPort: true },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // protobuf-es needs BigInt.
    target: "es2022",
    sourcemap: true,
  },
}));
