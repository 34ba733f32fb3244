//! A subagent call (Claude's Task/Agent tool) as a chip: its agent type and task, its status and
//! how long it ran, opening into the steps its agent made and the report it gave back.

import { useContext, useState } from "react";
import type { ToolBlock } from "../../api/types";
import { formatElapsed } from "../../chat/activity";
import { Icon } from "../ui/Icon";
import { Kept, ToolView } from "./Blocks";

const STATUS_TEXT: Record<ToolBlock["status"], string> = {
  running: "Running",
  done: "Done",
  error: "Failed",
  stopped: "Stopped",
};

export function SubagentChip({ chatId, block, steps }: { chatId: string; block: ToolBlock; steps: readonly ToolBlock[] }) {
  // Kept open while its stretch is (a windowed stretch unmounts it out of range).
  const kept = useContext(Kept);
  const key = `subagent:${block.tool_use_id}`;
  const [open, setOpen] = useState(() => kept?.open.has(key) ?? false);
  const toggle = () => {
    if (open) kept?.open.delete(key);
    else kept?.open.add(key);
    setOpen(!open);
  };
  const bodyId = `subagent-${block.tool_use_id}`;
  const kind = block.subagent_type ?? "Subagent";
  const count = steps.length === 1 ? "1 step" : `${steps.length} steps`;
  return (
    <div className="subagent" data-status={block.status}>
      <button type="button" className="subagent-head" aria-expanded={open} aria-controls={bodyId} onClick={toggle}>
        <Icon name="spark" size={16} />
        <span className="subagent-text">
          <span className="subagent-kind">{kind}</span>
          <span className="subagent-task">{block.input || "A subtask"}</span>
        </span>
        <span className="subagent-meta">
          {count}
          {typeof block.elapsed_ms === "number" && ` · ${formatElapsed(block.elapsed_ms)}`}
        </span>
        <span className="tool-status" data-status={block.status}>
          <span className="tool-status-dot" aria-hidden="true" />
          {STATUS_TEXT[block.status]}
        </span>
        <span className="tool-glyph tool-chevron" aria-hidden="true" />
      </button>
      {open && (
        <div className="subagent-steps" id={bodyId}>
          {steps.length === 0 && <p className="tool-empty">{block.status === "running" ? "Starting…" : "No steps."}</p>}
          {steps.map((step) => (
            <ToolView key={step.tool_use_id} chatId={chatId} block={step} />
          ))}
          {block.output && (
            <div className="subagent-report">
              <p className="tool-meta">Report</p>
              <pre className="tool-pre">{block.output}</pre>
            </div>
          )}
        </div>
      )}
    </div>
  );
}
