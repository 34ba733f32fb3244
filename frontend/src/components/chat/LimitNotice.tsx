//! The composer's warning when the provider's plan is close to a limit (a window at 80 % or
//! more, or refused): read from what the CLI last reported, again after each turn.

import { useQuery } from "@tanstack/react-query";
import { fetchProviderUsage, limitWarning, nearLimit, providerUsageKey } from "../../api/settings";
import type { ProviderId } from "../../api/types";

export function LimitNotice({ provider, turns }: { provider: ProviderId; turns: number }) {
  const usage = useQuery({
    queryKey: [...providerUsageKey(provider), turns],
    queryFn: () => fetchProviderUsage(provider),
    retry: false,
    staleTime: 60_000,
  });
  const now = usage.dataUpdatedAt;
  const window = usage.data ? nearLimit(usage.data.windows, now) : null;
  if (!window) return null;
  return (
    <p className="composer-notice" role="status">
      {limitWarning(window, now)}
    </p>
  );
}
