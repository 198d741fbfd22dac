import { decimalPlaces } from '../common/validators';
import { creditsUsed } from './credits';

describe('creditsUsed', () => {
  it.each([
    [95, 1, 1.58],
    [61.5, 1, 1.03],
    [0, 1, 0],
    [60, 1, 1],
    [30, 1, 0.5],
    [1, 1, 0.02],
    [0.3, 1, 0.01],
    [0.29, 1, 0],
    [86_400, 1, 1440],
    [95, 2.5, 3.96],
    [61.5, 0.5, 0.51],
    [120, 0, 0],
  ])('%s s at %s credits a minute is %s', (seconds, rate, expected) => {
    expect(creditsUsed(seconds, rate)).toBe(expected);
  });

  it('counts the duration in whole milliseconds (the API takes at most 3 decimals), so the formula holds exactly', () => {
    expect(creditsUsed(29.999, 1)).toBe(0.5); // 0.49998… → 0.5
    expect(creditsUsed(0.299, 1)).toBe(0); // 0.00498…
    expect(creditsUsed(0.001, 1000)).toBe(0.02); // 0.0166…
    expect(creditsUsed(86_399.999, 1)).toBe(1440);
  });

  it('takes rates with up to 4 decimals exactly', () => {
    expect(creditsUsed(60, 0.0001)).toBe(0);
    expect(creditsUsed(3000, 0.0001)).toBe(0.01); // 0.005 → 0.01
    expect(creditsUsed(60, 0.3333)).toBe(0.33);
    expect(creditsUsed(86_400, 1_000_000)).toBe(1_440_000_000);
  });

  it('rounds exact halves up despite floating-point representation', () => {
    // 0.6 s → 0.01 credit exactly; 0.9 s → 0.015 → 0.02; 2.7 s → 0.045 → 0.05
    expect(creditsUsed(0.9, 1)).toBe(0.02);
    expect(creditsUsed(2.7, 1)).toBe(0.05);
    expect(creditsUsed(64.5, 1)).toBe(1.08);
  });
});

describe('decimalPlaces', () => {
  it.each([
    [95, 0],
    [61.5, 1],
    [61.005, 3],
    [0.001, 3],
    [1e-4, 4],
    [1.5e-7, 8],
    [9e-323, 323],
    [1e21, 0],
    [86_400, 0],
  ])('%s needs %s', (value, places) => {
    expect(decimalPlaces(value)).toBe(places);
  });
});
