// Lint rules for the PWA: TypeScript-aware, React hooks rules, zero warnings allowed.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

export default defineConfig(
  { ignores: ["dist/", "node_modules/"] },
  {
    files: ["**/*.{ts,tsx}"],
    extends: [js.configs.recommended, tseslint.configs.recommendedTypeChecked, reactHooks.configs.flat.recommended],
    languageOptions: {
      ecmaVersion: 2022,
      globals: globals.browser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { attributes: false } }],
      eqeqeq: ["error", "always"],
    },
  },
  {
    // The service worker has its own tsconfig (WebWorker globals instead of the DOM's).
    files: ["src/sw.ts", "src/pwa/pushWorker.ts"],
    languageOptions: {
      globals: globals.serviceworker,
      parserOptions: { projectService: false, project: "./tsconfig.sw.json", tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    files: ["**/*.{js,mjs}"],
    extends: [js.configs.recommended],
    languageOptions: { globals: globals.node },
  },
  {
    // Code that runs inside sandboxed mini-app frames (served as-is, and bundled into apps).
    files: ["public/**/*.js"],
    languageOptions: { sourceType: "module", globals: globals.browser },
  },
  {
    // The frame bootstrap is a classic script (the service worker inlines it into frame documents).
    files: ["public/app-frame.js"],
    languageOptions: { sourceType: "script" },
  },
);
