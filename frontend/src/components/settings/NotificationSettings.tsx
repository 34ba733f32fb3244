//! Settings → Notifications: turn pushes on for this device (the prompt comes from the tap),
//! send a test, switch kinds on and off, and see and remove the devices that receive them.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { fetchDevices, fetchPrefs, KIND_LABELS, pushDevicesKey, pushPrefsKey, removeDevice, savePrefs, sendTest } from "../../api/push";
import { disablePush, enablePush, pushState, type PushState } from "../../shell/push";

const STATE_TEXT: Record<PushState, string> = {
  unsupported: "This browser cannot receive notifications. On iPhone, add Möbius to the Home Screen first.",
  denied: "Notifications are blocked for this site; allow them in the browser's site settings.",
  off: "This device does not receive notifications.",
  on: "This device receives notifications.",
};

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : "Something went wrong.";
}

export default function NotificationSettings() {
  const queryClient = useQueryClient();
  const [state, setState] = useState<PushState | null>(null);
  useEffect(() => {
    void pushState().then(setState, () => setState("unsupported"));
  }, []);
  const toggle = useMutation({
    mutationFn: () => (state === "on" ? disablePush() : enablePush()),
    onSuccess: (next) => {
      setState(next);
      void queryClient.invalidateQueries({ queryKey: pushDevicesKey });
    },
  });
  const test = useMutation({ mutationFn: sendTest });
  const prefs = useQuery({ queryKey: pushPrefsKey, queryFn: fetchPrefs, retry: false });
  const setPref = useMutation({
    mutationFn: (change: Record<string, boolean>) => savePrefs(change),
    onSuccess: (data) => queryClient.setQueryData(pushPrefsKey, data),
  });
  const devices = useQuery({ queryKey: pushDevicesKey, queryFn: fetchDevices, retry: false });
  const remove = useMutation({
    mutationFn: removeDevice,
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: pushDevicesKey }),
  });

  return (
    <section className="settings-section" aria-labelledby="s-notifications">
      <h2 id="s-notifications" className="settings-title">
        Notifications
      </h2>
      <p className="settings-lead">{state ? STATE_TEXT[state] : "Checking this device…"}</p>
      <div className="inline-actions">
        {(state === "off" || state === "on") && (
          <button type="button" className="btn btn-primary btn-small" onClick={() => toggle.mutate()} disabled={toggle.isPending}>
            {state === "on" ? "Turn off on this device" : "Enable on this device"}
          </button>
        )}
        <button type="button" className="btn btn-secondary btn-small" onClick={() => test.mutate()} disabled={test.isPending || !devices.data?.length}>
          {test.isSuccess ? "Test sent" : "Send a test"}
        </button>
      </div>
      {toggle.isError && <p className="settings-error" role="alert">{errorText(toggle.error)}</p>}
      {test.isError && <p className="settings-error" role="alert">{errorText(test.error)}</p>}
      {prefs.data && (
        <fieldset className="setting-stack notification-kinds">
          <legend className="settings-lead">Tell me when</legend>
          {Object.entries(KIND_LABELS).map(([kind, label]) => (
            <label key={kind} className="toggle-row">
              <input
                type="checkbox"
                checked={prefs.data.kinds[kind] ?? true}
                onChange={(e) => setPref.mutate({ [kind]: e.target.checked })}
                disabled={setPref.isPending}
              />
              <span>{label}</span>
            </label>
          ))}
        </fieldset>
      )}
      {devices.data && devices.data.length > 0 && (
        <ul className="device-list" aria-label="Devices that receive notifications">
          {devices.data.map((d) => (
            <li key={d.id} className="device-row">
              <span>{d.label || d.service || "Device"}</span>
              <button type="button" className="btn btn-ghost btn-small" onClick={() => remove.mutate(d.id)} disabled={remove.isPending}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
