//! Publish an app (its menu in the drawer): a read-only copy at `/sites/<token>/` for anyone with
//! the link — a snapshot of its data now, or its live data, read only. Once published: the link,
//! Open, Copy link, Unpublish, and publishing again (the link stays; the copy is replaced).

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import type { AppSummary } from "../../api/apps";
import { appSiteKey, fetchAppSite, publishApp, publishedSitesKey, siteAddress } from "../../api/published";
import { pageTheme } from "../../apps/frameTheme";
import { Sheet } from "../ui/Sheet";
import { errorText, SiteActions, siteKind } from "../settings/PublishedSettings";

export function PublishSheet({ app, onClose }: { app: Pick<AppSummary, "id" | "name">; onClose: () => void }) {
  const queryClient = useQueryClient();
  const site = useQuery({ queryKey: appSiteKey(app.id), queryFn: () => fetchAppSite(app.id) });
  const [live, setLive] = useState<boolean | null>(null);
  const mode = live ?? site.data?.live ?? false;
  const publish = useMutation({
    // The page is painted as the app is here: the owner's theme, both schemes.
    mutationFn: () => publishApp(app.id, mode, pageTheme()),
    onSuccess: (published) => {
      queryClient.setQueryData(appSiteKey(app.id), published);
      void queryClient.invalidateQueries({ queryKey: publishedSitesKey });
    },
  });
  const current = site.data ?? null;
  return (
    <Sheet label={`Publish ${app.name}`} title={`Publish ${app.name}`} onClose={onClose}>
      <div className="setting-stack publish-sheet">
        <p className="settings-lead">Anyone with the link can open a read-only copy of this app, signed out. Nothing they do is saved, and they reach nothing else of yours.</p>
        <fieldset className="publish-mode">
          <legend>Data on the page</legend>
          <label className="radio-row">
            <input type="radio" name="publish-mode" checked={!mode} onChange={() => setLive(false)} />
            <span>
              <strong>Snapshot</strong> — the app's data as it is now
            </span>
          </label>
          <label className="radio-row">
            <input type="radio" name="publish-mode" checked={mode} onChange={() => setLive(true)} />
            <span>
              <strong>Live</strong> — its data as it changes, read only
            </span>
          </label>
        </fieldset>
        <div className="inline-actions">
          <button type="button" className="btn btn-primary" onClick={() => publish.mutate()} disabled={publish.isPending || site.isPending}>
            {publish.isPending ? "Publishing…" : current ? "Publish again" : "Publish"}
          </button>
        </div>
        {(publish.isError || site.isError) && (
          <p className="settings-error" role="alert">
            {errorText(publish.error ?? site.error)}
          </p>
        )}
        {current && (
          <div className="published-current" aria-label="Published page">
            <label className="field-label" htmlFor="publish-link">
              Published · {siteKind(current)}
            </label>
            <input id="publish-link" className="text-input" readOnly value={siteAddress(current)} onFocus={(e) => e.currentTarget.select()} />
            <SiteActions site={current} onUnpublished={() => queryClient.setQueryData(appSiteKey(app.id), null)} />
          </div>
        )}
      </div>
    </Sheet>
  );
}
