// Builds the console (`npm run build`, scripts/build.mjs) into dist/console/, which the owner
// serves under /console/ (server/src/console.ts). Everything is a file of its own (no inline
// script or style), so the strict content security policy holds.
import { fileURLToPath } from "node:url";
import { defaultClientConditions, defineConfig } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root,
  base: "/console/",
  logLevel: "warn",
  // "@chronolog/sdk/gen/..." from the SDK's TypeScript sources (its package's chronolog-source condition).
  resolve: { conditions: ["chronolog-source", ...defaultClientConditions] },
  build: {
    outDir: fileURLToPath(new URL("../dist/console/", import.meta.url)),
    emptyOutDir: true,
    // protobuf-es needs BigInt.
    target: "es2022",
    sourcemap: true,
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 1024,
    rollupOptions: {
      // TanStack Query marks its modules "use client" (for React server components): meaningless here.
      onwarn(warning, warn) {
        if (warning.code !== "MODULE_LEVEL_DIRECTIVE") warn(warning);
      },
    },
  },
});
