//! The signed-in shell: sidebar (drawer on phones), top bar, the open chat or Settings, the open
//! app (beside the chat on wide screens, full screen on phones), the single offline note and
//! the undo toast. Owns the chat and app lists and their mutations, and opens the preview of an
//! app the agent just built in the open chat.

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { lazy, Suspense, useCallback, useEffect, useRef, useState } from "react";
import { signOutEverywhere, type Session } from "../../api/auth";
import { chatKey, chatsKey, createChat, deleteChat, fetchChatSummary, patchChat, recoverChat } from "../../api/chats";
import { ApiError } from "../../api/client";
import { anyConnected, fetchProvidersStatus, providersStatusKey } from "../../api/settings";
import type { ChatSummary } from "../../api/types";
import { crashDraft, type HostRequest } from "../../apps/host";
import { loadLastChat, saveDraft } from "../../chat/persist";
import { newCid } from "../../chat/queue";
import { onAppPreview } from "../../shell/appEvents";
import { useWide } from "../../shell/layout";
import { useOnline } from "../../shell/online";
import {
  closeApp,
  closeDrawer,
  closeSettings,
  currentNav,
  navigate,
  openApp,
  openDrawer,
  settingsBack,
  settingsTitle,
  takeSlugLink,
  useNav,
  type Route,
} from "../../shell/router";
import { usePresence } from "../../shell/push";
import { withChat, withChatPatched, withoutChat, type ChatList } from "../../shell/chatList";
import { useSystemEvents } from "../../shell/systemEvents";
import { useChatList } from "../../shell/useChatList";
import { AccountMenu } from "./AccountMenu";
import { AppPane } from "../apps/AppPane";
import { useApps } from "../apps/useApps";
import { PublishSheet } from "../apps/PublishSheet";
import type { AppSummary } from "../../api/apps";
import { ChatInfo } from "../chat/ChatInfo";
import { ChatView } from "../chat/ChatView";
import { InstallOffer } from "./InstallOffer";
import { ShellUpdateOffer } from "./ShellUpdateOffer";
import { Drawer, listsNoChat } from "./Drawer";
import { Icon } from "../ui/Icon";
import { preloadMarkdown } from "../chat/Markdown";
import { loadAppsView, loadSettings } from "../../shell/routeModules";
import DecisionSheet from "../chat/DecisionSheet";
import NotificationBell from "./NotificationBell";

const Settings = lazy(loadSettings);
const AppsView = lazy(loadAppsView);

export interface ShellProps {
  session: Session;
  onSignOut: (everywhere: boolean) => void;
}

interface Toast {
  text: string;
  action?: { label: string; run: () => void };
}

const TOAST_MS = 8_000;

export function Shell({ session, onSignOut }: ShellProps) {
  const queryClient = useQueryClient();
  const online = useOnline();
  const { route, drawer, app: openAppId, intent: appIntent } = useNav();
  const wide = useWide();
  const owner = session.username;
  useSystemEvents();

  const chats = useChatList();
  const chatList = chats.list?.chats;
  const providers = useQuery({ queryKey: providersStatusKey, queryFn: fetchProvidersStatus, staleTime: 60_000, retry: false });
  const [liveTitle, setLiveTitle] = useState<{ id: string; title: string } | null>(null);
  const [toast, setToast] = useState<Toast | null>(null);
  // The search hit to show when its chat opens; `n` tells two taps on one hit apart.
  const [focus, setFocus] = useState<{ chatId: string; idx: number; n: number } | null>(null);
  const toastTimer = useRef<ReturnType<typeof setTimeout> | null>(null);

  const showToast = useCallback((next: Toast) => {
    if (toastTimer.current) clearTimeout(toastTimer.current);
    setToast(next);
    toastTimer.current = setTimeout(() => setToast(null), TOAST_MS);
  }, []);

  useEffect(() => {
    if ("requestIdleCallback" in window) window.requestIdleCallback(() => void preloadMarkdown());
    else setTimeout(() => void preloadMarkdown(), 400);
  }, []);

  const everywhere = useMutation({ mutationFn: signOutEverywhere, onSuccess: () => onSignOut(true) });
  const accountError =
    everywhere.error instanceof ApiError && everywhere.error.status !== 401 ? `Couldn't sign out everywhere: ${everywhere.error.message}` : null;

  const create = useMutation({
    mutationFn: (id: string) => createChat({ id }),
    // The id is minted here, so retrying after a lost answer cannot create a second chat.
    retry: (failures, error) => error instanceof ApiError && error.isNetwork && failures < 2,
    onSuccess: (summary) => {
      if (summary) queryClient.setQueryData<ChatList>(chatsKey, (list) => (list ? withChat(list, summary) : list));
    },
  });

  /** Opens an empty chat: an unused one when there is one, else a new one (client-minted id). */
  const openNewChat = useCallback(
    (options: { replace?: boolean } = {}) => {
      const spare = chatList?.find((c) => !c.has_messages && c.pinned_at === null && !c.running);
      if (spare) {
        navigate({ name: "chat", id: spare.id }, options);
        return;
      }
      const id = newCid();
      create.mutate(id, { onSuccess: () => navigate({ name: "chat", id }, options) });
    },
    [chatList, create],
  );

  // "/" opens the last chat, else the newest, else a fresh one.
  const list = chatList;
  const listComplete = chats.list?.next === null;
  const creatingHome = useRef(false);
  useEffect(() => {
    if (route.name !== "home" || !list) return;
    const last = loadLastChat(owner);
    const fallback = list.find((c) => c.has_messages) ?? list[0];
    const open = (id: string) => navigate({ name: "chat", id }, { replace: true, app: currentNav().app });
    const known = list.find((c) => c.id === last);
    if (known) open(known.id);
    else if (last && !listComplete) {
      // The last chat may sit on a page not loaded yet: ask for it alone.
      void fetchChatSummary(last)
        .then((chat) => chat.id)
        .catch(() => fallback?.id)
        .then((id) => {
          if (id && currentNav().route.name === "home") open(id);
        });
    } else if (fallback) open(fallback.id);
    else if (!creatingHome.current && online) {
      creatingHome.current = true;
      openNewChat({ replace: true });
    }
  }, [route.name, list, listComplete, owner, online, openNewChat]);

  const rename = useMutation({
    mutationFn: ({ id, title }: { id: string; title: string }) => patchChat(id, { title }),
    onMutate: ({ id, title }) => {
      queryClient.setQueryData<ChatList>(chatsKey, (l) => l && withChatPatched(l, id, (c) => ({ ...c, title })));
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: chatsKey }),
  });

  const pin = useMutation({
    mutationFn: (chat: ChatSummary) => patchChat(chat.id, { pinned: chat.pinned_at === null }),
    onMutate: (chat) => {
      queryClient.setQueryData<ChatList>(chatsKey, (l) =>
        l && withChatPatched(l, chat.id, (c) => ({ ...c, pinned_at: c.pinned_at === null ? Date.now() : null })),
      );
    },
    onSettled: () => queryClient.invalidateQueries({ queryKey: chatsKey }),
  });

  const removeChat = useMutation({
    mutationFn: (chat: ChatSummary) => deleteChat(chat.id),
    onMutate: (chat) => {
      queryClient.setQueryData<ChatList>(chatsKey, (l) => l && withoutChat(l, chat.id));
      void dropCachedList();
      if (route.name === "chat" && route.id === chat.id) navigate({ name: "home" }, { replace: true });
    },
    onSuccess: (_data, chat) => {
      queryClient.removeQueries({ queryKey: chatKey(chat.id) });
      showToast({
        text: `Deleted “${chat.title || "New chat"}”`,
        action: {
          label: "Undo",
          run: () => {
            setToast(null);
            void recoverChat(chat.id)
              .then(() => queryClient.invalidateQueries({ queryKey: chatsKey }))
              .then(() => navigate({ name: "chat", id: chat.id }))
              .catch(() => showToast({ text: "Couldn't restore that chat." }));
          },
        },
      });
    },
    onError: () => {
      showToast({ text: "Couldn't delete that chat." });
      void queryClient.invalidateQueries({ queryKey: chatsKey });
    },
  });

  // ---------- apps ----------

  const apps = useApps({ openAppId, online, showToast, hideToast: () => setToast(null) });
  const appList = apps.list;
  const openedApp = appList?.find((a) => a.id === openAppId);

  // `?app=<slug>` (a deep link naming the app by its folder): once the apps are known, the
  // current entry is re-addressed by the app's id, keeping the intent.
  useEffect(() => {
    if (!appList) return;
    const link = takeSlugLink();
    const target = link && appList.find((a) => a.slug === link.slug);
    if (target) openApp(target.id, link.intent, { replace: true });
  }, [appList]);

  /** Goes to `route`; on wide screens the open app stays beside it. */
  const go = useCallback(
    (to: Route, options: { replace?: boolean } = {}) => navigate(to, { ...options, app: wide ? currentNav().app : null }),
    [wide],
  );

  // The agent built an app in the chat on screen: open it beside the chat on wide screens; on
  // phones offer it (taking the whole screen mid-reply would be jarring).
  const [offer, setOffer] = useState<{ appId: number; chatId: string } | null>(null);
  const previewContext = useRef({ activeChatId: null as string | null, wide });
  useEffect(() => {
    previewContext.current = { activeChatId: route.name === "chat" ? route.id : null, wide };
  });
  useEffect(
    () =>
      onAppPreview(({ appId, chatId }) => {
        const context = previewContext.current;
        if (chatId === null || chatId !== context.activeChatId) return;
        if (currentNav().app === appId) return;
        if (context.wide) openApp(appId);
        else setOffer({ appId, chatId });
      }),
    [],
  );
  const offeredApp = offer && route.name === "chat" && route.id === offer.chatId && openAppId === null ? appList?.find((a) => a.id === offer.appId) : undefined;

  const onHostRequest = useCallback(
    (request: HostRequest) => {
      const from = appList?.find((a) => a.id === currentNav().app);
      switch (request.kind) {
        case "new-chat": {
          const id = newCid();
          create.mutate(id, {
            onSuccess: () => {
              if (request.draft) saveDraft(owner, id, request.draft);
              go({ name: "chat", id });
            },
          });
          return;
        }
        case "open-chat":
          if (request.draft) saveDraft(owner, request.chatId, request.draft);
          go({ name: "chat", id: request.chatId });
          return;
        case "open-app": {
          const target = appList?.find((a) => (typeof request.appId === "number" ? a.id === request.appId : a.slug === request.appId));
          if (target) openApp(target.id, request.intent);
          return;
        }
        case "install-app":
          closeApp();
          navigate({ name: "apps", tab: "installed", source: request.source });
          return;
        case "manage-app":
          closeApp();
          navigate({ name: "apps", tab: "installed", manage: { action: request.action, appId: request.appId } });
          return;
        case "open-settings":
          navigate({ name: "settings" });
          return;
        case "report": {
          const draft = crashDraft(from?.name ?? "app", request.message);
          const chatId = from?.chat_id;
          if (chatId) {
            saveDraft(owner, chatId, draft);
            go({ name: "chat", id: chatId });
          } else {
            const id = newCid();
            create.mutate(id, {
              onSuccess: () => {
                saveDraft(owner, id, draft);
                go({ name: "chat", id });
              },
            });
          }
          return;
        }
      }
    },
    [appList, create, go, owner],
  );

  const activeId = route.name === "chat" ? route.id : null;
  usePresence(activeId);
  const summary = activeId ? chatList?.find((c) => c.id === activeId) : undefined;
  const chatTitle =
    route.name === "settings"
      ? route.section
        ? settingsTitle(route.section)
        : "Settings"
      : route.name === "apps"
        ? "Apps"
        : summary?.title || (liveTitle?.id === activeId ? liveTitle?.title : "") || "New chat";
  const title = openedApp && !wide ? openedApp.name : chatTitle;
  // "No chats yet" only while the drawer lists none (it never lists an empty chat).
  const firstRun = listsNoChat(chatList, chats.list?.next !== null && chats.list !== undefined);
  const needsProvider = anyConnected(providers.data) === false;
  const onTitle = useCallback((t: string) => activeId && setLiveTitle({ id: activeId, title: t }), [activeId]);
  const [infoOpen, setInfoOpen] = useState(false);
  const [publishing, setPublishing] = useState<AppSummary | null>(null);

  // The phone drawer takes focus when it opens and gives it back to the menu button on close.
  const drawerRef = useRef<HTMLDivElement>(null);
  const menuButtonRef = useRef<HTMLButtonElement>(null);
  const drawerWasOpen = useRef(false);
  useEffect(() => {
    if (drawer) (drawerRef.current?.querySelector<HTMLElement>(".new-chat:not(:disabled)") ?? drawerRef.current?.querySelector<HTMLElement>("button:not(:disabled)"))?.focus();
    else if (drawerWasOpen.current) menuButtonRef.current?.focus();
    drawerWasOpen.current = drawer;
  }, [drawer]);

  // Escape closes the phone drawer, like Back.
  useEffect(() => {
    if (!drawer) return;
    const onKey = (event: KeyboardEvent) => {
      // A menu inside the drawer (the account's, a row's) takes its own Escape first.
      if (event.key === "Escape" && !event.defaultPrevented) closeDrawer();
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [drawer]);

  const drawerProps = {
    chats: chatList,
    loading: chats.loading,
    hasMore: chats.list !== undefined && chats.list.next !== null,
    loadingMore: chats.loadingMore,
    onLoadMore: chats.loadMore,
    activeId,
    settingsActive: route.name === "settings",
    settingsNeedsAttention: needsProvider,
    appsActive: route.name === "apps",
    updatesAvailable: appList?.filter((a) => a.update?.available).length ?? 0,
    onOpenApps: () => navigate({ name: "apps", tab: "installed" }),
    offline: !online,
    creating: create.isPending,
    onNewChat: () => openNewChat(),
    onOpenChat: (id: string) => go({ name: "chat", id }),
    onOpenHit: (id: string, messageIdx: number | null) => {
      setFocus(messageIdx === null ? null : { chatId: id, idx: messageIdx, n: (focus?.n ?? 0) + 1 });
      if (route.name !== "chat" || route.id !== id) go({ name: "chat", id });
      else closeDrawer();
    },
    onOpenSettings: () => navigate({ name: "settings" }),
    onRename: (id: string, t: string) => rename.mutate({ id, title: t }),
    onTogglePin: (chat: ChatSummary) => pin.mutate(chat),
    onDelete: (chat: ChatSummary) => removeChat.mutate(chat),
    apps: appList,
    activeAppId: openAppId,
    onOpenApp: (id: number) => openApp(id),
    onRenameApp: apps.rename,
    onTogglePinApp: apps.togglePin,
    onDeleteApp: apps.remove,
    onPublishApp: (app: AppSummary) => {
      setPublishing(app);
      closeDrawer();
    },
  };
  const appFullScreen = openAppId !== null && !wide;
  const accountMenu = (
    <AccountMenu
      username={owner}
      onSignOut={() => onSignOut(false)}
      onSignOutEverywhere={() => everywhere.mutate()}
      signingOutEverywhere={everywhere.isPending}
      error={accountError}
    />
  );

  return (
    <div className="app" data-app-open={openAppId !== null || undefined}>
      <title>{`${title} · Möbius`}</title>
      <aside className="sidebar" inert={appFullScreen || undefined}>
        <Drawer {...drawerProps} />
      </aside>
      {drawer && (
        <div className="drawer-layer">
          <button type="button" className="scrim" aria-label="Close chats" tabIndex={-1} onClick={closeDrawer} />
          <div ref={drawerRef} className="drawer" role="dialog" aria-modal="true" aria-label="Chats">
            <Drawer {...drawerProps} account={accountMenu} />
          </div>
        </div>
      )}
      <div className="main" inert={drawer || appFullScreen || undefined}>
        {route.name === "settings" ? (
          <header className="topbar topbar-settings">
            {route.section ? (
              <button type="button" className="topbar-back" onClick={settingsBack}>
                <Icon name="back" size={20} />
                <span>Settings</span>
              </button>
            ) : (
              <button ref={menuButtonRef} type="button" className="icon-button topbar-menu" aria-label="Open chats" aria-expanded={drawer} onClick={openDrawer}>
                <Icon name="menu" size={22} />
              </button>
            )}
            <h1 className="topbar-title">{chatTitle}</h1>
            <button type="button" className="topbar-done" onClick={closeSettings}>
              Done
            </button>
          </header>
        ) : (
        <header className="topbar">
          <button ref={menuButtonRef} type="button" className="icon-button topbar-menu" aria-label="Open chats" aria-expanded={drawer} onClick={openDrawer}>
            <Icon name="menu" size={22} />
            {needsProvider && <span className="attention-dot attention-dot-corner" aria-hidden="true" />}
          </button>
          {activeId ? (
            // The title is the way to the chat's info sheet (as in a phone's messages app), so
            // the bar keeps its width for the title.
            <h1 className="topbar-title">
              <button type="button" className="topbar-title-button" aria-label={`${chatTitle}, chat info`} onClick={() => setInfoOpen(true)}>
                <span className="topbar-title-text">{chatTitle}</span>
                <Icon name="chevron-down" size={16} className="topbar-title-chevron" />
              </button>
            </h1>
          ) : (
            <h1 className="topbar-title">{chatTitle}</h1>
          )}
          <button
            type="button"
            className="icon-button topbar-new"
            aria-label="New chat"
            onClick={() => openNewChat()}
            disabled={!online || create.isPending}
          >
            <Icon name="compose" size={20} />
          </button>
          <NotificationBell />
          {accountMenu}
        </header>
        )}
        <DecisionSheet search={location.search} />
        <ShellUpdateOffer />
        {route.name === "chat" && <InstallOffer />}
        {!online && (
          <div className="offline-note" role="status">
            <Icon name="offline" size={16} />
            <span>You're offline · saved chats are readable</span>
          </div>
        )}
        {infoOpen && activeId && <ChatInfo chatId={activeId} title={chatTitle} onClose={() => setInfoOpen(false)} />}
        {publishing && <PublishSheet app={publishing} onClose={() => setPublishing(null)} />}
        <main className="view">
          {route.name === "chat" && (
            <ChatView
              key={route.id}
              chatId={route.id}
              owner={owner}
              summary={summary}
              firstRun={firstRun}
              onTitle={onTitle}
              onOpenSettings={() => navigate({ name: "settings", section: "agents" })}
              focus={focus?.chatId === route.id ? focus : null}
            />
          )}
          {route.name === "settings" && (
            <Suspense fallback={<div className="settings-loading" role="status" aria-label="Loading settings" />}>
              <Settings owner={owner} section={route.section} onOpenSection={(section) => navigate({ name: "settings", section })} onSignOut={onSignOut} />
            </Suspense>
          )}
          {route.name === "apps" && (
            <Suspense fallback={<div className="settings-loading" role="status" aria-label="Loading apps" />}>
              <AppsView tab={route.tab} source={route.source} manage={route.manage} apps={appList} owner={owner} online={online} showToast={showToast} />
            </Suspense>
          )}
          {offeredApp && (
            <div className="app-offer" role="status">
              <img className="app-icon" src={offeredApp.icon_url} alt="" width={28} height={28} />
              <span className="app-offer-text">
                <strong>{offeredApp.name}</strong> is ready
              </span>
              <button
                type="button"
                className="btn btn-primary btn-small"
                aria-label={`Open ${offeredApp.name}`}
                onClick={() => {
                  setOffer(null);
                  openApp(offeredApp.id);
                }}
              >
                Open
              </button>
              <button type="button" className="icon-button icon-button-small" aria-label="Dismiss" onClick={() => setOffer(null)}>
                <Icon name="close" size={16} />
              </button>
            </div>
          )}
          {route.name === "home" && (
            <div className="chat-loading" role="status" aria-label={online ? "Opening your chats" : "Offline"}>
              {!online && !chats.list && <p className="empty-lead">You're offline and no chats are saved on this device yet.</p>}
            </div>
          )}
        </main>
      </div>
      {openAppId !== null && <AppPane app={openedApp} intent={appIntent} loading={apps.loading} onClose={closeApp} onHostRequest={onHostRequest} />}
      <div className="toast-region" role="status" aria-live="polite">
        {toast && (
          <div className="toast">
            <span>{toast.text}</span>
            {toast.action && (
              <button type="button" className="toast-action" onClick={toast.action.run}>
                {toast.action.label}
              </button>
            )}
          </div>
        )}
      </div>
    </div>
  );
}

/** The service worker's offline copy of the list must not bring a deleted chat back. */
async function dropCachedList(): Promise<void> {
  try {
    const cache = await caches.open("mobius-shell-data");
    await cache.delete("/api/chats", { ignoreSearch: true });
  } catch {
    // No CacheStorage (tests, private mode): nothing to drop.
  }
}
