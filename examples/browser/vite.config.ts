// Builds the browser example (`npm run build:browser`): index.html + main.ts
// bundled into examples/browser/dist/, with relative asset paths so any static
// server (or a sub-path) can serve it.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root,
  base: "./",
  logLevel: "warn",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    // protobuf-es needs BigInt.
    target: "es2022",
    sourcemap: true,
  },
});
