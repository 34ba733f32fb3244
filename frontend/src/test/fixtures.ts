//! Shared test data.

import type { AppSummary } from "../api/apps";

/** A live app as `GET /api/apps` lists it; URLs follow its id, slug and `v` unless given. */
export function appSummary(id: number, extra: Partial<AppSummary> = {}): AppSummary {
  const slug = extra.slug ?? `app-${id}`;
  const v = extra.v ?? "s";
  return {
    id,
    slug,
    name: `App ${id}`,
    description: "",
    version: "1",
    theme_color: null,
    background_color: null,
    display: null,
    offline_capable: false,
    bundle_sha: v,
    v,
    module_url: `/api/apps/${id}/module?v=${v}`,
    frame_url: `/api/apps/${id}/frame?v=${v}`,
    icon_url: `/api/apps/${id}/icon?v=${v}`,
    standalone_url: `/apps/${slug}/`,
    chat_id: null,
    pinned_at: null,
    last_opened_at: null,
    has_unseen_update: false,
    created_at: 1,
    updated_at: 1,
    ...extra,
  };
}
