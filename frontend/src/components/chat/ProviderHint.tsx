//! First-run hint beside the composer: no agent provider is connected yet, so say which to
//! connect and link to Settings. Dismissible; shown again when a send is refused for it.

import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { anyConnected, fetchProvidersStatus, providersStatusKey } from "../../api/settings";
import { dismissHint, isHintDismissed } from "../../chat/persist";
import { Icon } from "../ui/Icon";

export function ProviderHint({ owner, forced, onOpenSettings, onDismiss }: { owner: string; forced: boolean; onOpenSettings: () => void; onDismiss: () => void }) {
  const status = useQuery({ queryKey: providersStatusKey, queryFn: fetchProvidersStatus, staleTime: 60_000, retry: false });
  const [dismissed, setDismissed] = useState(() => isHintDismissed(owner));
  const connected = anyConnected(status.data);
  const show = forced || (connected === false && !dismissed);
  if (!show) return null;
  return (
    <div className="hint" role="note">
      <Icon name="spark" size={16} className="hint-icon" />
      <p className="hint-text">
        {forced ? "No agent is connected, so that wasn't sent — it's still in the box. " : "Connect an agent to start chatting. "}
        <button type="button" className="link-button" onClick={onOpenSettings}>
          Connect Claude or Codex in Settings
        </button>
      </p>
      <button
        type="button"
        className="icon-button icon-button-small"
        aria-label="Dismiss hint"
        onClick={() => {
          dismissHint(owner);
          setDismissed(true);
          onDismiss();
        }}
      >
        <Icon name="close" size={16} />
      </button>
    </div>
  );
}
