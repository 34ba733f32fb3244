//! The app's TanStack Query client and its defaults.

import { QueryClient } from "@tanstack/react-query";
import { ApiError } from "./client";

/** Retries a query once when the connection failed outright; HTTP errors are answers and a
 *  timeout has already waited long enough, so neither is retried. */
export function createQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        retry: (failureCount, error) => error instanceof ApiError && error.code === "network" && failureCount < 1,
        staleTime: 30_000,
      },
      mutations: { retry: false },
    },
  });
}
