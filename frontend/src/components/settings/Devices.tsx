//! Settings › Account: the signed-in devices (name, where and when), each signed out on its
//! own, and pairing a new device with a short code or a QR code instead of the password.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { formatDistanceToNow } from "date-fns";
import { useEffect, useMemo, useState } from "react";
import { encode } from "uqr";
import { ApiError } from "../../api/client";
import { cancelPairing, createPairing, devicesKey, fetchDevices, fetchPairing, revokeDevice, type Device, type PairingCode } from "../../api/auth";
import { deviceName } from "../../auth/deviceName";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");
/** How often a shown code asks whether it was used. */
const PAIRING_POLL_MS = 2_000;

export function DevicesSection({ onSignedOutHere }: { onSignedOutHere: () => void }) {
  const devices = useQuery({ queryKey: devicesKey, queryFn: fetchDevices, retry: false });
  return (
    <div className="setting-stack" aria-labelledby="s-devices">
      <h3 id="s-devices" className="settings-subtitle">
        Signed-in devices
      </h3>
      {devices.isPending && <p className="settings-lead">Loading…</p>}
      {devices.isError && <p className="settings-error" role="alert">{`Couldn't load them: ${errorText(devices.error)}`}</p>}
      {devices.data && (
        <ul className="device-list" aria-label="Signed-in devices">
          {devices.data.devices.map((d) => (
            <DeviceRow key={d.id} device={d} onSignedOutHere={onSignedOutHere} />
          ))}
        </ul>
      )}
      <PairDevice />
    </div>
  );
}

function DeviceRow({ device, onSignedOutHere }: { device: Device; onSignedOutHere: () => void }) {
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => revokeDevice(device.id),
    onSuccess: () => {
      if (device.current) onSignedOutHere();
      else void queryClient.invalidateQueries({ queryKey: devicesKey });
    },
  });
  const name = device.legacy ? "Sessions from before this version" : deviceName(device.label);
  const seen = device.current ? "Active now" : `Last seen ${formatDistanceToNow(device.last_seen_at, { addSuffix: true })}`;
  return (
    <li className="device-row" data-device={device.id} data-current={device.current || undefined}>
      <span className="device-text">
        <span className="device-name">
          {name}
          {device.current && <span className="device-badge">This device</span>}
        </span>
        <span className="device-detail">
          {seen}
          {device.address ? ` · signed in from ${device.address}` : ""}
          {device.signed_in_at ? ` · ${new Date(device.signed_in_at).toLocaleDateString()}` : ""}
        </span>
        {revoke.isError && <span className="settings-error" role="alert">{errorText(revoke.error)}</span>}
      </span>
      <button type="button" className="btn btn-danger-quiet btn-small" onClick={() => revoke.mutate()} disabled={revoke.isPending} aria-label={`Sign out ${name}`}>
        {revoke.isPending ? "Signing out…" : "Sign out"}
      </button>
    </li>
  );
}

/** A pairing code with its QR code, shown until it is used, expires or is withdrawn. */
function PairDevice() {
  const queryClient = useQueryClient();
  const [code, setCode] = useState<PairingCode | null>(null);
  const [paired, setPaired] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: createPairing,
    onSuccess: (made) => {
      setPaired(null);
      setCode(made);
    },
  });
  const status = useQuery({
    queryKey: ["auth", "pairing", code?.code],
    queryFn: fetchPairing,
    enabled: code !== null,
    refetchInterval: PAIRING_POLL_MS,
    retry: false,
  });
  const now = useNow(code !== null);
  // The code was used: show who paired (adjusted during render, not in an effect).
  if (code !== null && status.data?.status === "paired") {
    setPaired(status.data.label);
    setCode(null);
  }
  useEffect(() => {
    if (paired !== null) void queryClient.invalidateQueries({ queryKey: devicesKey });
  }, [paired, queryClient]);
  const expired = code !== null && now >= code.expires_at;
  const close = () => {
    setCode(null);
    void cancelPairing().catch(() => undefined);
  };
  return (
    <div className="pairing" aria-live="polite">
      {code === null ? (
        <>
          <p className="settings-lead">Sign a phone or another computer in without typing the password: it opens the QR code's address, or enters the code on its sign-in page.</p>
          <div className="inline-actions">
            <button type="button" className="btn btn-secondary btn-small" onClick={() => create.mutate()} disabled={create.isPending}>
              {create.isPending ? "Making a code…" : "Pair a new device"}
            </button>
          </div>
          {paired !== null && <p className="settings-lead" role="status">{`Paired: ${deviceName(paired)}.`}</p>}
          {create.isError && <p className="settings-error" role="alert">{errorText(create.error)}</p>}
        </>
      ) : (
        <div className="pairing-code" data-expired={expired || undefined}>
          <QrCode text={code.url} />
          <p className="pairing-digits" aria-label="Pairing code">
            {code.code}
          </p>
          <p className="settings-lead">
            {expired ? "This code has expired." : `Works once, for ${Math.max(0, Math.ceil((code.expires_at - now) / 60_000))} more minute(s).`}
          </p>
          <div className="inline-actions">
            {expired && (
              <button type="button" className="btn btn-secondary btn-small" onClick={() => create.mutate()}>
                New code
              </button>
            )}
            <button type="button" className="btn btn-secondary btn-small" onClick={close}>
              {expired ? "Close" : "Cancel"}
            </button>
          </div>
        </div>
      )}
    </div>
  );
}

/** The current time, ticking every second while `on`. */
function useNow(on: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!on) return;
    const timer = setInterval(() => setNow(Date.now()), 1_000);
    return () => clearInterval(timer);
  }, [on]);
  return now;
}

/** A QR code as SVG (dark modules as one path), with a quiet zone. */
export function QrCode({ text }: { text: string }) {
  const path = useMemo(() => {
    const { data, size } = encode(text, { ecc: "M", border: 2 });
    let d = "";
    data.forEach((row, y) =>
      row.forEach((dark, x) => {
        if (dark) d += `M${x} ${y}h1v1h-1z`;
      }),
    );
    return { d, size };
  }, [text]);
  return (
    <svg className="qr-code" viewBox={`0 0 ${path.size} ${path.size}`} role="img" aria-label={`QR code for ${text}`} shapeRendering="crispEdges">
      <rect width={path.size} height={path.size} fill="#fff" />
      <path d={path.d} fill="#000" />
    </svg>
  );
}
