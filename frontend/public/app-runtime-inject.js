// Compiled into every mini-app ahead of its entry (see the server's apply pipeline): starts the
// window.mobius runtime and hands the frame this bundle's own React, so the frame mounts the app
// with the same React instance the app imports.
import { createElement, Fragment, useEffect } from "react";
import { createRoot } from "react-dom/client";
import { initMobiusRuntime } from "mobius-runtime";

initMobiusRuntime(globalThis.__mobiusRuntimeConfig || {});
globalThis.__mobiusCompiledRuntime = { abi: 1, createElement, createRoot, Fragment, initMobiusRuntime, useEffect };
