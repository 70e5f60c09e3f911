import { OPTIONS, type OptionName } from '../../src/options/option-table.js';

/** Option `name`'s reader, as the option table holds it. */
export const readerOf = (name: OptionName) => (value: unknown) => OPTIONS[name].kind.read(name, value);

/** The kinds' readers by the value they read, for the tests of each kind. */
export const readSize = readerOf('size');
export const readFormat = readerOf('format');
export const readChannels = readerOf('channels');
export const readRoi = readerOf('roi');
export const readCropMargin = readerOf('crop_margin');
export const readScale = readerOf('scale');
export const readPosition = readerOf('position');
export const readShadowType = readerOf('shadow_type');
export const readShadowOpacity = readerOf('shadow_opacity');
/** A colour under any option's name. */
export const readColour = (name: string, value: unknown) => OPTIONS.bg_color.kind.read(name, value);
/** A switch under any option's name. */
export const readBoolean = (name: string, value: unknown) => OPTIONS.crop.kind.read(name, value);
