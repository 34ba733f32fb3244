//! The shell's app registry: the list (`GET /api/apps`), rename / pin / delete with Undo (the
//! service worker's offline copy of the list is dropped on delete, so it cannot bring the app
//! back), and "opened" bookkeeping — each build of the open app is reported once.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import { appsKey, deleteApp, listApps, markAppOpened, patchApp, recoverApp, type AppSummary } from "../../api/apps";
import { SHELL_DATA_CACHE } from "../../pwa/cachePolicy";
import { closeApp, currentNav } from "../../shell/router";

interface Toast {
  text: string;
  action?: { label: string; run: () => void };
}

export interface AppsHandle {
  list: AppSummary[] | undefined;
  loading: boolean;
  rename: (app: AppSummary, name: string) => void;
  togglePin: (app: AppSummary) => void;
  remove: (app: AppSummary) => void;
}

async function dropCachedApps(): Promise<void> {
  try {
    const cache = await caches.open(SHELL_DATA_CACHE);
    await Promise.all([cache.delete("/api/apps"), cache.delete("/api/apps/")]);
  } catch {
    // No CacheStorage: nothing to drop.
  }
}

export function useApps({
  openAppId,
  online,
  showToast,
  hideToast,
}: {
  openAppId: number | null;
  online: boolean;
  showToast: (toast: Toast) => void;
  hideToast: () => void;
}): AppsHandle {
  const queryClient = useQueryClient();
  const apps = useQuery({ queryKey: appsKey, queryFn: ({ signal }) => listApps(signal), staleTime: 10_000 });
  const refresh = () => queryClient.invalidateQueries({ queryKey: appsKey });
  const edit = (change: (list: AppSummary[]) => AppSummary[]) => queryClient.setQueryData<AppSummary[]>(appsKey, (l) => (l ? change(l) : l));

  const rename = useMutation({
    mutationFn: ({ app, name }: { app: AppSummary; name: string }) => patchApp(app.id, { name }),
    onMutate: ({ app, name }) => edit((l) => l.map((a) => (a.id === app.id ? { ...a, name } : a))),
    onError: () => showToast({ text: "Couldn't rename that app." }),
    onSettled: refresh,
  });

  const pin = useMutation({
    mutationFn: (app: AppSummary) => patchApp(app.id, { pinned: app.pinned_at === null }),
    onMutate: (app) => edit((l) => l.map((a) => (a.id === app.id ? { ...a, pinned_at: a.pinned_at === null ? Date.now() : null } : a))),
    onSettled: refresh,
  });

  const remove = useMutation({
    mutationFn: (app: AppSummary) => deleteApp(app.id),
    onMutate: (app) => {
      edit((l) => l.filter((a) => a.id !== app.id));
      void dropCachedApps();
      if (currentNav().app === app.id) closeApp();
    },
    onSuccess: (_data, app) => {
      showToast({
        text: `Deleted “${app.name}”`,
        action: {
          label: "Undo",
          run: () => {
            hideToast();
            void recoverApp(app.id)
              .then(refresh)
              .catch(() => showToast({ text: "Couldn't restore that app." }));
          },
        },
      });
    },
    onError: () => {
      showToast({ text: "Couldn't delete that app." });
      void refresh();
    },
  });

  // Opening an app records it (which also marks its build as seen).
  const opened = apps.data?.find((a) => a.id === openAppId);
  const openKey = opened ? `${opened.id}:${opened.v}` : null;
  const marked = useRef<string | null>(null);
  useEffect(() => {
    if (openKey === null) {
      marked.current = null;
      return;
    }
    if (!online || marked.current === openKey || openAppId === null) return;
    marked.current = openKey;
    markAppOpened(openAppId)
      .then(() => queryClient.invalidateQueries({ queryKey: appsKey }))
      .catch(() => undefined);
  }, [openKey, openAppId, online, queryClient]);

  return {
    list: apps.data,
    loading: apps.isPending,
    rename: (app, name) => rename.mutate({ app, name }),
    togglePin: (app) => pin.mutate(app),
    remove: (app) => remove.mutate(app),
  };
}
