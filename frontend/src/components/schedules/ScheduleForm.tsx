//! A new scheduled prompt: what to ask, when (every day, weekdays or once a week at a time, a
//! cron cadence, or once), and where (a given chat, or a new chat each time).

import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { ApiError } from "../../api/client";
import { createSchedule, schedulesKey, type NewSchedule, type Schedule } from "../../api/schedules";
import { buildCron, describeCron } from "../../schedules/cadence";

const errorText = (error: unknown) => (error instanceof ApiError ? error.message : "Something went wrong.");

type When = "day" | "weekdays" | "week" | "cron" | "once";

const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

export default function ScheduleForm({
  chatId,
  chatTitle,
  onDone,
  onCancel,
}: {
  /** The chat the prompt goes into; `null`: a new chat each time. */
  chatId: string | null;
  chatTitle?: string;
  onDone: (made: Schedule) => void;
  onCancel: () => void;
}) {
  const queryClient = useQueryClient();
  const [prompt, setPrompt] = useState("");
  const [name, setName] = useState("");
  const [when, setWhen] = useState<When>("weekdays");
  const [time, setTime] = useState("07:30");
  const [weekday, setWeekday] = useState(1);
  const [cron, setCron] = useState("0 9 * * 1");
  const [at, setAt] = useState("");
  const create = useMutation({
    mutationFn: createSchedule,
    onSuccess: (made) => {
      void queryClient.invalidateQueries({ queryKey: schedulesKey });
      onDone(made);
    },
  });
  const ids = { prompt: useId(), name: useId(), when: useId(), time: useId(), weekday: useId(), cron: useId(), at: useId() };
  const built = when === "cron" ? cron.trim() : when === "once" ? null : buildCron({ every: when, time, weekday });
  const ready = prompt.trim() !== "" && (when === "once" ? at !== "" : built !== null && built !== "");
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    if (!ready) return;
    const body: NewSchedule = { prompt: prompt.trim(), ...(chatId ? { chat_id: chatId } : { new_chat: true }) };
    if (name.trim()) body.name = name.trim();
    if (when === "once") body.at = at.replace("T", " ");
    else if (built) body.cron = built;
    create.mutate(body);
  };
  return (
    <form className="setting-stack schedule-form" onSubmit={onSubmit} aria-label="New scheduled prompt">
      <p className="settings-lead">
        {chatId ? `The prompt is sent into “${chatTitle ?? "this chat"}” as if you wrote it, and the agent answers there.` : "Each time, the prompt starts a new chat."}
      </p>
      <label htmlFor={ids.prompt} className="field-label">
        Prompt
      </label>
      <textarea
        id={ids.prompt}
        className="field-input"
        rows={3}
        value={prompt}
        onChange={(e) => setPrompt(e.target.value)}
        placeholder="Summarise today's calendar and the weather"
      />
      <label htmlFor={ids.name} className="field-label">
        Name (optional)
      </label>
      <input id={ids.name} className="field-input" value={name} maxLength={120} onChange={(e) => setName(e.target.value)} placeholder="Morning brief" />
      <label htmlFor={ids.when} className="field-label">
        When
      </label>
      <select id={ids.when} className="select" value={when} onChange={(e) => setWhen(e.target.value as When)}>
        <option value="day">Every day</option>
        <option value="weekdays">Weekdays</option>
        <option value="week">Once a week</option>
        <option value="once">Once</option>
        <option value="cron">Cron expression</option>
      </select>
      {when === "week" && (
        <>
          <label htmlFor={ids.weekday} className="field-label">
            Day
          </label>
          <select id={ids.weekday} className="select" value={weekday} onChange={(e) => setWeekday(Number(e.target.value))}>
            {WEEKDAYS.map((day, i) => (
              <option key={day} value={i}>
                {day}
              </option>
            ))}
          </select>
        </>
      )}
      {(when === "day" || when === "weekdays" || when === "week") && (
        <>
          <label htmlFor={ids.time} className="field-label">
            Time
          </label>
          <input id={ids.time} className="field-input" type="time" value={time} onChange={(e) => setTime(e.target.value)} />
        </>
      )}
      {when === "cron" && (
        <>
          <label htmlFor={ids.cron} className="field-label">
            Cron expression
          </label>
          <input
            id={ids.cron}
            className="field-input mono"
            value={cron}
            onChange={(e) => setCron(e.target.value)}
            spellCheck={false}
            autoCapitalize="off"
            autoCorrect="off"
          />
          <p className="field-hint">minute hour day month weekday · {describeCron(cron)}</p>
        </>
      )}
      {when === "once" && (
        <>
          <label htmlFor={ids.at} className="field-label">
            At
          </label>
          <input id={ids.at} className="field-input" type="datetime-local" value={at} onChange={(e) => setAt(e.target.value)} />
        </>
      )}
      <p className="field-hint">Times are in your time zone (Settings › Schedules).</p>
      {create.isError && (
        <p className="settings-error" role="alert">
          {errorText(create.error)}
        </p>
      )}
      <div className="inline-actions">
        <button type="submit" className="btn btn-primary btn-small" disabled={!ready || create.isPending}>
          Schedule
        </button>
        <button type="button" className="btn btn-secondary btn-small" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
