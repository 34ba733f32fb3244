//! "Reload to get the new version": shown when the server serves another build of the shell
//! (the agent rebuilt it, the owner switched, or a broken build was rolled back), and only
//! while no chat on screen is streaming, so a reload never cuts a turn the owner is watching.

import { busyStore } from "../../shell/activity";
import { shellUpdateStore } from "../../shell/shellBuild";
import { useStore } from "../../shell/store";

export function ShellUpdateOffer() {
  const update = useStore(shellUpdateStore);
  const busy = useStore(busyStore);
  if (update === null || busy) return null;
  return (
    <div className="install-offer install-offer-shell" role="region" aria-label="New version of Möbius">
      <span className="install-offer-text">{update.reason ?? "A new version of Möbius is ready."}</span>
      <button type="button" className="btn btn-primary btn-small" onClick={() => location.reload()}>
        Reload to get the new version
      </button>
      <button type="button" className="btn btn-ghost btn-small" onClick={() => shellUpdateStore.set(null)}>
        Later
      </button>
    </div>
  );
}
