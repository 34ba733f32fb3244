//! One transcript row: the owner's message as a bubble, or the assistant's turn as its blocks
//! in order. The live turn and its final form are the same row (same key), so nothing flickers.

import { memo } from "react";
import type { ApprovalAnswers, QuestionAnswers } from "../api/types";
import type { ChatMessage } from "../chat/reducer";
import { ErrorView, ThinkingView, ToolView } from "./Blocks";
import { Markdown } from "./Markdown";
import { QuestionCard } from "./QuestionCard";

export interface MessageRowProps {
  rowKey: string;
  chatId: string;
  message: ChatMessage;
  live: boolean;
  /** Live and not waiting on the owner: show the working dots. */
  working: boolean;
  onAnswer: (questionId: string, answers: QuestionAnswers | ApprovalAnswers) => Promise<void>;
  offline: boolean;
  /** The message's index in the transcript (settled rows). */
  idx?: number | undefined;
  /** The search hit the owner opened the chat at. */
  hit?: boolean;
}

export const MessageRow = memo(function MessageRow({ rowKey, chatId, message, live, working, onAnswer, offline, idx, hit }: MessageRowProps) {
  if (message.role === "user") {
    return (
      <div className="row row-user" data-key={rowKey} data-idx={idx} data-hit={hit || undefined} data-cid={message.cid ?? undefined} data-sending={message.sending || undefined}>
        <div className="bubble">{message.content}</div>
        {message.sending && <span className="row-note">Sending…</span>}
      </div>
    );
  }
  const all = message.blocks && message.blocks.length > 0 ? message.blocks : message.content ? [{ type: "text" as const, content: message.content, item_id: "content" }] : [];
  // The question card stands for the AskUserQuestion call that produced it.
  const hasCard = all.some((b) => b.type === "question");
  const blocks = hasCard ? all.filter((b) => !(b.type === "tool" && b.tool === "AskUserQuestion")) : all;
  return (
    <div className="row row-assistant" data-key={rowKey} data-idx={idx} data-hit={hit || undefined} data-live={live || undefined} aria-busy={live || undefined}>
      {blocks.map((block, i) => {
        switch (block.type) {
          case "text":
            return <Markdown key={`t:${block.item_id}:${i}`} text={block.content} />;
          case "thinking":
            return <ThinkingView key={`k:${block.item_id}:${i}`} block={block} live={live && i === blocks.length - 1} />;
          case "tool":
            return <ToolView key={`u:${block.tool_use_id}`} chatId={chatId} block={block} />;
          case "question":
            return <QuestionCard key={`q:${block.question_id}`} block={block} onAnswer={onAnswer} disabled={offline} />;
          case "error":
            return <ErrorView key={`e:${i}`} block={block} />;
        }
      })}
      {!live && blocks.length === 0 && <p className="row-quiet">Stopped before replying.</p>}
      {working && (
        <div className="working" role="status">
          <span className="working-dots" aria-hidden="true">
            <span />
            <span />
            <span />
          </span>
          <span className="visually-hidden">The agent is working</span>
        </div>
      )}
    </div>
  );
});
