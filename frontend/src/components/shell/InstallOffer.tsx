//! The shell's offer to go on the home screen: one compact line on the chat screen, in the first
//! session where the browser can install (Android's prompt) or on iOS (where the steps are
//! shown); once per device, dismissible. Not shown once installed, nor in a later session.

import { useEffect, useState } from "react";
import {
  isInstalled,
  isIos,
  markShellOfferDone,
  markShellOfferShown,
  promptInstall,
  shellOfferDone,
  useInstalledNow,
  useInstallPrompt,
} from "../../pwa/install";
import { Icon } from "../ui/Icon";

export function InstallOffer() {
  const prompt = useInstallPrompt();
  const installedNow = useInstalledNow();
  const [done, setDone] = useState(shellOfferDone);
  const [ios] = useState(isIos);
  const [steps, setSteps] = useState(false);
  const visible = !(done || installedNow || isInstalled() || (!prompt && !ios));
  useEffect(() => {
    if (visible) markShellOfferShown();
  }, [visible]);
  if (!visible) return null;
  // iOS browsers never prompt: the steps are the way there (a prompt seen there is not Safari's).
  const android = prompt !== null && !ios;
  const finish = (how: "dismissed" | "installed") => {
    markShellOfferDone(how);
    setDone(true);
  };
  return (
    <div className="install-offer install-offer-shell" role="region" aria-label="Install Möbius">
      <Icon name="download" size={18} className="install-offer-icon" />
      {android ? (
        <>
          <span className="install-offer-text">Install Möbius as an app</span>
          <button
            type="button"
            className="btn btn-primary btn-small"
            onClick={() => {
              // Whatever the owner answers the browser, the offer has been made.
              finish("installed");
              void promptInstall(prompt);
            }}
          >
            Install
          </button>
        </>
      ) : steps ? (
        <span className="install-offer-text" role="status">
          Tap <strong>Share</strong>, then <strong>Add to Home Screen</strong>.
        </span>
      ) : (
        <>
          <span className="install-offer-text">Add Möbius to Home Screen</span>
          <button type="button" className="btn btn-primary btn-small" onClick={() => setSteps(true)}>
            How
          </button>
        </>
      )}
      <button type="button" className="icon-button" aria-label="Dismiss the install offer" onClick={() => finish("dismissed")}>
        <Icon name="close" size={16} />
      </button>
    </div>
  );
}
