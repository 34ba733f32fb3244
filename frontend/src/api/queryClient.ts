//! The app's TanStack Query client and its defaults.

import { QueryClient } from "@tanstack/react-query";
import { ApiError } from "./client";

/** Retries a query once when the connection failed outright; HTTP errors are answers and a
 *  timeout has already waited long enough, so neither is retried. Requests run even when the
 *  browser says it is offline: the service worker may answer them from its cache, and a
 *  failure is an answer the boot machine and the views can show. */
export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        retry: (failureCount, error) => error instanceof ApiError && error.code === "network" && failureCount < 1,
        staleTime: 30_000,
        networkMode: "always",
      },
      mutations: { retry: false, networkMode: "always" },
    },
  });
}
