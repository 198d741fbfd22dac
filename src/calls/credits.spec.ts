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

  it('counts the duration in whole milliseconds, half up', () => {
    // 29.9995 s is 29,999.5 ms → 30,000 ms → 0.5 credit; 29.9994 s → 29,999 ms → 0.49999… → 0.5 as well, 0.0003 s → 0 ms.
    expect(creditsUsed(29.9995, 1)).toBe(0.5);
    expect(creditsUsed(0.0003, 1000)).toBe(0);
    expect(creditsUsed(0.0005, 1000)).toBe(0.02);
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
