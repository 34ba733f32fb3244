//! Settings › Published pages: every app published at `/sites/<token>/` — which app, when, a
//! snapshot or live data — with Open, Copy link and Unpublish. An app is published from its menu
//! in the drawer (`PublishSheet`).

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { formatDistanceToNow } from "date-fns";
import { useState } from "react";
import { ApiError } from "../../api/client";
import { fetchPublishedSites, publishedSitesKey, siteAddress, unpublishSite, type PublishedSite } from "../../api/published";
import { copyToClipboard } from "../../chat/clipboard";

export function errorText(error: unknown): string {
  return error instanceof ApiError ? error.message : "Something went wrong.";
}

/** "Snapshot · 3 files, 12 KB" or "Live data". */
export function siteKind(site: PublishedSite): string {
  if (site.live) return "Live data (read only)";
  const size = site.bytes < 1024 ? `${site.bytes} B` : site.bytes < 1024 * 1024 ? `${Math.round(site.bytes / 1024)} KB` : `${(site.bytes / (1024 * 1024)).toFixed(1)} MB`;
  return `Snapshot · ${site.files} ${site.files === 1 ? "file" : "files"}, ${size}`;
}

/** Open, Copy link and Unpublish for one page. */
export function SiteActions({ site, onUnpublished }: { site: PublishedSite; onUnpublished?: () => void }) {
  const queryClient = useQueryClient();
  const [copied, setCopied] = useState(false);
  const unpublish = useMutation({
    mutationFn: () => unpublishSite(site.id),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: publishedSitesKey });
      onUnpublished?.();
    },
  });
  const address = siteAddress(site);
  return (
    <>
      <span className="inline-actions">
        <a className="btn btn-secondary btn-small" href={address} target="_blank" rel="noopener noreferrer">
          Open
        </a>
        <button
          type="button"
          className="btn btn-secondary btn-small"
          onClick={() => {
            void copyToClipboard(address).then(setCopied);
          }}
        >
          {copied ? "Copied" : "Copy link"}
        </button>
        <button type="button" className="btn btn-danger btn-small" onClick={() => unpublish.mutate()} disabled={unpublish.isPending} aria-label={`Unpublish ${site.app_name}`}>
          {unpublish.isPending ? "Unpublishing…" : "Unpublish"}
        </button>
      </span>
      {unpublish.isError && (
        <span className="settings-error" role="alert">
          {errorText(unpublish.error)}
        </span>
      )}
    </>
  );
}

export function PublishedSettings() {
  const sites = useQuery({ queryKey: publishedSitesKey, queryFn: fetchPublishedSites });
  const list = sites.data?.sites ?? [];
  return (
    <div className="setting-stack published-settings">
      <p className="settings-lead">
        Read-only copies of apps that anyone with the link can open, signed out. Nothing a visitor does is saved. Publish an app from its menu (⋯) in the drawer.
      </p>
      {sites.isError && (
        <p className="settings-error" role="alert">
          {errorText(sites.error)}
        </p>
      )}
      {sites.isSuccess && list.length === 0 && <p className="settings-lead">Nothing is published.</p>}
      {list.length > 0 && (
        <ul className="device-list published-list" aria-label="Published pages">
          {list.map((site) => (
            <li key={site.id} className="device-row published-row" data-site={site.id}>
              <span className="device-text">
                <span className="device-name">{site.app_name}</span>
                <span className="device-detail">
                  {siteKind(site)} · published {formatDistanceToNow(site.created_at, { addSuffix: true })}
                  {site.updated_at !== site.created_at && `, updated ${formatDistanceToNow(site.updated_at, { addSuffix: true })}`}
                </span>
              </span>
              <SiteActions site={site} />
            </li>
          ))}
        </ul>
      )}
      {sites.data && list.length >= sites.data.max && <p className="settings-lead">At most {sites.data.max} pages can be published; unpublish one to publish another.</p>}
    </div>
  );
}
