//! Build, dev-server and unit-test configuration for the PWA shell, including the service
//! worker (vite-plugin-pwa, injectManifest: `src/sw.ts` gets the precache list).
import react from "@vitejs/plugin-react";
import { VitePWA } from "vite-plugin-pwa";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [
    react(),
    VitePWA({
      strategies: "injectManifest",
      srcDir: "src",
      filename: "sw.ts",
      injectRegister: null,
      manifest: false,
      injectManifest: {
        // woff2: the KaTeX fonts, so math typesets offline as it does online.
        globPatterns: ["**/*.{js,css,html,svg,png,ico,woff2}"],
        // The runtime modules are compiled into apps by the server, never loaded as they are.
        globIgnores: ["sw.js", "manifest.webmanifest", "mobius-runtime.js", "mobius-chat.js", "app-runtime-inject.js", "runtime/**", "embed-chat.html"],
        // Every entry gets a content revision, hashed assets included.
        dontCacheBustURLsMatching: /(?!)/,
        maximumFileSizeToCacheInBytes: 3 * 1024 * 1024,
      },
    }),
  ],
  build: {
    outDir: "dist",
    assetsDir: "assets",
    target: "es2022",
    sourcemap: false,
    // The shell, and the nested chat frame apps embed (served at /shell/embed/chat).
    rollupOptions: { input: { main: "index.html", embed: "embed-chat.html" } },
  },
  server: {
    proxy: {
      "/api": { target: "http://127.0.0.1:8000", changeOrigin: false },
    },
    // The reducer's tests read the fixture of real turns the server's tests share.
    fs: { allow: [".", "../tests/fixtures"] },
  },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.{ts,tsx}"],
    setupFiles: ["src/test/setup.ts"],
    restoreMocks: true,
    // A hang guard, not a speed check: typing-heavy tests take seconds on a loaded 2-core machine.
    testTimeout: 20_000,
  },
});
