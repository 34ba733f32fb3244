//! Files in the transcript: a message's attachments (thumbnails for pictures, chips with name
//! and size for the rest) and the images a tool returned. Pictures open the lightbox, with the
//! other pictures of the same message to swipe through; files download.

import { useState } from "react";
import type { Attachment } from "../../api/protocol.gen";
import { openLightbox, type LightboxImage } from "../../chat/lightbox";
import { dropMediaToken, formatSize, isImageType, mediaToken, uploadUrl, useMediaToken, withToken } from "../../chat/media";
import { Icon } from "../ui/Icon";

/** One picture thumbnail (the server's preview), sized before it loads. */
function Thumb({ chatId, url, alt, width, height, preview, onOpen }: { chatId: string; url: string; alt: string; width?: number | undefined; height?: number | undefined; preview: boolean; onOpen: () => void }) {
  const token = useMediaToken(chatId);
  const [retried, setRetried] = useState(false);
  const ratio = width && height ? `${width} / ${height}` : undefined;
  return (
    <button type="button" className="file-thumb" onClick={onOpen} aria-label={`Open image ${alt}`} style={ratio ? { aspectRatio: ratio } : undefined}>
      {token && (
        <img
          src={withToken(url, token, preview)}
          alt={alt}
          loading="lazy"
          decoding="async"
          onError={() => {
            // A token that expired meanwhile: one fresh try.
            if (retried) return;
            setRetried(true);
            dropMediaToken(chatId);
            void mediaToken(chatId);
          }}
        />
      )}
    </button>
  );
}

/** The lightbox's list for these pictures, with `token` (fetched if needed). */
async function open(chatId: string, images: { url: string; name: string }[], index: number): Promise<void> {
  const token = await mediaToken(chatId);
  if (!token) return;
  const list: LightboxImage[] = images.map((i) => ({ src: withToken(i.url, token), alt: i.name, name: i.name }));
  openLightbox(list, index);
}

/** A user message's files. */
export function MessageFiles({ chatId, files }: { chatId: string; files: readonly Attachment[] }) {
  const token = useMediaToken(chatId);
  const pictures = files.filter((f) => isImageType(f.mime_type));
  const others = files.filter((f) => !isImageType(f.mime_type));
  const images = pictures.map((f) => ({ url: uploadUrl(chatId, f.name), name: f.name }));
  return (
    <div className="message-files">
      {pictures.length > 0 && (
        <div className="file-thumbs" data-count={Math.min(pictures.length, 4)}>
          {pictures.map((f, i) => (
            <Thumb key={f.name} chatId={chatId} url={uploadUrl(chatId, f.name)} alt={f.name} width={f.width} height={f.height} preview={f.preview} onOpen={() => void open(chatId, images, i)} />
          ))}
        </div>
      )}
      {others.map((f) => (
        <a key={f.name} className="file-chip" href={token ? withToken(uploadUrl(chatId, f.name), token) : undefined} download={f.name} aria-label={`Download ${f.name}, ${formatSize(f.size)}`}>
          <Icon name="file" size={18} />
          <span className="file-chip-name">{f.name}</span>
          <span className="file-chip-size">{formatSize(f.size)}</span>
        </a>
      ))}
    </div>
  );
}

/** Images a tool returned (chat media URLs). */
export function ToolImages({ chatId, urls }: { chatId: string; urls: readonly string[] }) {
  const images = urls.map((url) => ({ url, name: url.slice(url.lastIndexOf("/") + 1) }));
  return (
    <div className="file-thumbs tool-images" data-count={Math.min(images.length, 4)}>
      {images.map((image, i) => (
        <Thumb key={image.url} chatId={chatId} url={image.url} alt={image.name} preview onOpen={() => void open(chatId, images, i)} />
      ))}
    </div>
  );
}

export { open as openChatImages };
