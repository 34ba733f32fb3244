//! The chat's model and effort, picked beside the send button: a chip naming what the next
//! turn runs with (the chat's own pick, else the owner's default from Settings, else the
//! CLI's), opening a small panel with the provider's models and the effort levels the chosen
//! one takes. A pick is saved on the chat at once (`PATCH /api/chats/{id}`).

import { useEffect, useId, useRef, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { patchChat } from "../../api/chats";
import {
  fetchModels,
  fetchProvidersStatus,
  fetchSettings,
  modelsKey,
  providersStatusKey,
  settingsKey,
  shortModel,
} from "../../api/settings";
import type { AgentPick, ModelInfo, ProviderId } from "../../api/types";

export interface ModelPickerProps {
  chatId: string;
  provider: ProviderId | null;
  model: string | null;
  effort: string | null;
  disabled?: boolean;
}

/** What the chip says: the model's short name and the effort, or "Default". */
export function pickLabel(list: ModelInfo[], model: string | null, effort: string | null): string {
  const found = model ? list.find((m) => m.id === model) : undefined;
  const name = model ? shortModel(found?.label ?? model) : "Default";
  return effort ? `${name} · ${effort}` : name;
}

/** The effort levels on offer for `model` (the CLI's default model when none is picked). */
export function effortLevels(list: ModelInfo[], model: string | null): string[] {
  const found = model ? list.find((m) => m.id === model) : list.find((m) => m.is_default);
  if (found) return found.effort_levels;
  // An unknown model: every level any model of the provider takes.
  return [...new Set(list.flatMap((m) => m.effort_levels))];
}

export function ModelPicker({ chatId, provider, model, effort, disabled = false }: ModelPickerProps) {
  const models = useQuery({ queryKey: modelsKey, queryFn: fetchModels, retry: false, staleTime: 300_000 });
  const status = useQuery({ queryKey: providersStatusKey, queryFn: fetchProvidersStatus, retry: false, staleTime: 60_000 });
  const settings = useQuery({ queryKey: settingsKey, queryFn: fetchSettings, retry: false, staleTime: 60_000 });
  const [open, setOpen] = useState(false);
  const [pick, setPick] = useState<AgentPick>({ model, effort });
  const [error, setError] = useState<string | null>(null);
  const panelRef = useRef<HTMLDivElement>(null);
  const id = useId();

  // A new chat, or the chat's pick changed elsewhere: show it.
  const [shown, setShown] = useState({ chatId, model, effort });
  if (shown.chatId !== chatId || shown.model !== model || shown.effort !== effort) {
    setShown({ chatId, model, effort });
    setPick({ model, effort });
  }
  useEffect(() => {
    if (!open) return;
    const close = (event: PointerEvent) => {
      if (panelRef.current && !panelRef.current.contains(event.target as Node)) setOpen(false);
    };
    const escape = (event: KeyboardEvent) => event.key === "Escape" && setOpen(false);
    document.addEventListener("pointerdown", close);
    document.addEventListener("keydown", escape);
    return () => {
      document.removeEventListener("pointerdown", close);
      document.removeEventListener("keydown", escape);
    };
  }, [open]);

  const kind: ProviderId = provider ?? status.data?.default_provider ?? "claude";
  const list = models.data?.providers[kind] ?? [];
  const defaults = settings.data?.agent_defaults?.[kind] ?? {};
  const shownModel = pick.model ?? defaults.model ?? null;
  const shownEffort = pick.effort ?? defaults.effort ?? null;
  const levels = effortLevels(list, shownModel);

  async function save(next: AgentPick) {
    const before = pick;
    setPick(next);
    setError(null);
    try {
      await patchChat(chatId, { model: next.model ?? null, effort: next.effort ?? null });
    } catch {
      setPick(before);
      setError("Could not save. Try again.");
    }
  }

  return (
    <div className="model-picker" ref={panelRef}>
      <button
        type="button"
        className="composer-model"
        aria-haspopup="dialog"
        aria-expanded={open}
        aria-controls={open ? `${id}-panel` : undefined}
        aria-label={`Model and effort: ${pickLabel(list, shownModel, shownEffort)}`}
        title="Model and effort for this chat"
        disabled={disabled}
        onClick={() => setOpen((o) => !o)}
      >
        {pickLabel(list, shownModel, shownEffort)}
      </button>
      {open && (
        <div className="model-picker-panel" role="dialog" id={`${id}-panel`} aria-label="Model and effort">
          <label htmlFor={`${id}-model`}>Model</label>
          <select
            id={`${id}-model`}
            className="select"
            value={pick.model ?? ""}
            onChange={(e) => void save({ model: e.target.value || null, effort: pick.effort ?? null })}
          >
            <option value="">Default{defaults.model ? ` (${shortModel(list.find((m) => m.id === defaults.model)?.label ?? defaults.model)})` : ""}</option>
            {list.map((m) => (
              <option key={m.id} value={m.id}>
                {m.label}
              </option>
            ))}
          </select>
          <label htmlFor={`${id}-effort`}>Effort</label>
          <select
            id={`${id}-effort`}
            className="select"
            value={pick.effort ?? ""}
            disabled={levels.length === 0 && !pick.effort}
            onChange={(e) => void save({ model: pick.model ?? null, effort: e.target.value || null })}
          >
            <option value="">Default{defaults.effort ? ` (${defaults.effort})` : ""}</option>
            {[...new Set([...levels, ...(pick.effort ? [pick.effort] : [])])].map((level) => (
              <option key={level} value={level}>
                {level}
              </option>
            ))}
          </select>
          {error && (
            <p className="settings-error" role="alert">
              {error}
            </p>
          )}
          <button type="button" className="btn btn-ghost btn-small" onClick={() => setOpen(false)}>
            Done
          </button>
        </div>
      )}
    </div>
  );
}
